package worldtree_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/kimiapp/kimi/app/worldtree"
)

// A tiny stand-in for a Worldtree server.
func exampleServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/me":
			io.WriteString(w, `{"user_id":"alice","scopes":["conversations.read"],"tier":"user"}`)
		case r.URL.Path == "/agents":
			io.WriteString(w, `[{"agent_id":"mimir","name":"Mimir","description":"Keeper of the Well"}]`)
		case strings.HasSuffix(r.URL.Path, "/persona_state"):
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"detail":{"error_code":"auth_scope_denied"}}`)
		case r.URL.Path == "/sessions":
			io.WriteString(w, `{"items":[],"next_cursor":null}`)
		}
	}))
}

// A client reads the server's identity and agents; DescribeError turns an error into a sentence
// for the operator.
func ExampleClient() {
	srv := exampleServer()
	defer srv.Close()
	c, err := worldtree.New(srv.URL, worldtree.WithKey("the-default-key"))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	me, err := c.GetMe(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("user:", me["user_id"], me["tier"])
	agents, err := c.ListAgents(ctx)
	if err != nil {
		panic(err)
	}
	for _, a := range agents {
		_, err := c.GetPersonaState(ctx, a.AgentID)
		fmt.Println("agent:", a.Name, "-", worldtree.DescribeError(err))
	}
	page, err := c.ListSessions(ctx, worldtree.WithLimit(20))
	if err != nil {
		panic(err)
	}
	fmt.Println("sessions:", len(page.Items), "more:", page.NextCursor != nil)
	// Output:
	// user: alice user
	// agent: Mimir - The Worldtree API key lacks the "persona.read" scope. Grant it to the key in Worldtree, or configure a key that has it.
	// sessions: 0 more: false
}
