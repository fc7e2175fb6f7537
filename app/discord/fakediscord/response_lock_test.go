package fakediscord

import (
	"sync"
	"testing"

	"github.com/bwmarrin/discordgo"
)

// TestResponsesMarshalledUnderTheLock: a handler's answer is a live
// pointer into the model (the application, a message); it must be encoded
// while the model's lock is held, or a concurrent change (SetAllowedIntents,
// an edit through another request) races with the encoding. Run with -race
// (the connection tests' 4014 scenario is where this race showed).
func TestResponsesMarshalledUnderTheLock(t *testing.T) {
	w := newWorld(t, Options{})
	s := w.rest()
	msg, err := s.ChannelMessageSend(w.text, "hello")
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	var wg sync.WaitGroup
	const n = 40
	stop := make(chan struct{})
	setter := make(chan struct{})
	go func() { // changes the application until the readers are done
		defer close(setter)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			w.fake.SetAllowedIntents(discordgo.Intent(i%2) * discordgo.IntentGuildMembers)
		}
	}()
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			if _, err := s.Application("@me"); err != nil {
				t.Errorf("application: %v", err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		s2 := w.rest()
		for i := 0; i < n; i++ {
			if i%2 == 0 {
				_, err = s2.ChannelMessageEdit(w.text, msg.ID, "edit")
			} else {
				_, err = s2.ChannelMessage(w.text, msg.ID)
			}
			if err != nil {
				t.Errorf("message: %v", err)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-setter
}
