package tests

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestAuth starts a server with --requirepass and checks the gate: nothing
// but AUTH/HELLO (and QUIT) runs before authenticating, with Redis's texts.
func TestAuth(t *testing.T) {
	t.Parallel()
	srv := StartServer(t, "--requirepass", "secret")

	t.Run("raw", func(t *testing.T) {
		c := srv.Raw(t)
		expectReply(t, c.Do("PING"), "(error) NOAUTH Authentication required.")
		expectReply(t, c.Do("GET", "k"), "(error) NOAUTH Authentication required.")
		expectReply(t, c.Do("SET", "k", "v"), "(error) NOAUTH Authentication required.")
		// Redis looks the command up before it checks authentication.
		expectReply(t, c.Do("NOSUCHCOMMAND"), "(error) ERR unknown command 'NOSUCHCOMMAND', with args beginning with: ")
		expectReply(t, c.Do("GET"), "(error) ERR wrong number of arguments for 'get' command")
		expectReply(t, c.Do("AUTH", "wrong"), "(error) WRONGPASS invalid username-password pair or user is disabled.")
		expectReply(t, c.Do("AUTH", "default", "wrong"), "(error) WRONGPASS invalid username-password pair or user is disabled.")
		expectReply(t, c.Do("AUTH", "nobody", "secret"), "(error) WRONGPASS invalid username-password pair or user is disabled.")
		expectReply(t, c.Do("AUTH", "a", "b", "c"), "(error) ERR syntax error")
		expectReply(t, c.Do("PING"), "(error) NOAUTH Authentication required.")
		expectReply(t, c.Do("AUTH", "secret"), "OK")
		expectReply(t, c.Do("PING"), "PONG")
		expectReply(t, c.Do("SET", "k", "v"), "OK")

		c2 := srv.Raw(t)
		expectReply(t, c2.Do("AUTH", "default", "secret"), "OK")
		expectReply(t, c2.Do("GET", "k"), `"v"`)
	})

	t.Run("HELLO", func(t *testing.T) {
		c := srv.Raw(t)
		expectReply(t, c.Do("HELLO", "3"), "(error) NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		expectReply(t, c.Do("HELLO", "3", "AUTH", "default", "wrong"), "(error) WRONGPASS invalid username-password pair or user is disabled.")
		r := c.Do("HELLO", "3", "AUTH", "default", "secret")
		if r.Kind != KindMap {
			t.Fatalf("HELLO 3 AUTH default secret:\n%s\nwant a map", r)
		}
		expectReply(t, c.Do("GET", "k"), `"v"`)

		c2 := srv.Raw(t)
		r = c2.Do("HELLO", "2", "AUTH", "default", "secret", "SETNAME", "authed")
		if r.Kind != KindArray {
			t.Fatalf("HELLO 2 AUTH ... SETNAME:\n%s\nwant an array", r)
		}
		expectReply(t, c2.Do("CLIENT", "GETNAME"), `"authed"`)
	})

	t.Run("go-redis", func(t *testing.T) {
		ctx := context.Background()
		for _, proto := range []int{2, 3} {
			c := srv.ClientWith(t, &redis.Options{Protocol: proto, Password: "secret"})
			if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
				t.Fatalf("RESP%d with password: GET = %q, %v", proto, v, err)
			}
			bad := srv.ClientWith(t, &redis.Options{Protocol: proto, Password: "wrong", MaxRetries: -1})
			if err := bad.Ping(ctx).Err(); err == nil {
				t.Fatalf("RESP%d with a wrong password: PING succeeded", proto)
			}
		}
	})
}
