package admin

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/kudos"
)

// TestGuildPagesViewedAtOnceShowTheirOwnSettings views two guilds' pages
// at the same time, over and over (run with -race): the module forms are
// built once and shared, each view copies and fills them, so each page
// must show its own guild's module values and never the other's.
func TestGuildPagesViewedAtOnceShowTheirOwnSettings(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	guilds := []struct {
		path, own, other string
	}{
		{"/guilds/42", `value="777"`, `value="888"`},
		{"/guilds/43", `value="888"`, `value="777"`},
	}
	h.writeDocument(guildcfg.GuildModuleTarget(42, kudos.Name), "---\ndigest_channel_id: 777\n---\n")
	h.writeDocument(guildcfg.GuildModuleTarget(43, kudos.Name), "---\ndigest_channel_id: 888\n---\n")
	const views = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*views*len(guilds))
	for w := range 2 {
		c := h.newClient()
		c.login(testUser, testPassword)
		wg.Go(func() {
			for i := range views {
				g := guilds[(i+w)%len(guilds)]
				res, err := c.http.Get(h.ts.URL + g.path)
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				switch {
				case err != nil:
					errs <- err
				case res.StatusCode != http.StatusOK:
					errs <- fmt.Errorf("GET %s = %d", g.path, res.StatusCode)
				case !strings.Contains(string(body), g.own) || strings.Contains(string(body), g.other):
					errs <- fmt.Errorf("GET %s: want %s and not %s", g.path, g.own, g.other)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
