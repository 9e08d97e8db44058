package tests

import (
	"strings"
	"testing"
)

// TestClientSetInfo covers CLIENT SETINFO, which go-redis and other clients
// send on connect. Redis added it in 7.2; against an older redis-server the
// test skips, so its expectations come from the 7.2 documentation.
func TestClientSetInfo(t *testing.T) {
	t.Parallel()
	srv := StartServer(t)
	c := srv.Raw(t)
	r := c.Do("CLIENT", "SETINFO", "lib-name", "dfly-tests")
	if IsRedis() && r.IsError() && strings.Contains(r.Str, "unknown subcommand") {
		t.Skip("this redis-server predates CLIENT SETINFO (Redis 7.2)")
	}
	expectReply(t, r, "OK")
	expectReply(t, c.Do("CLIENT", "SETINFO", "lib-ver", "1.0.0"), "OK")
	expectReply(t, c.Do("CLIENT", "SETINFO", "LIB-NAME", "upper"), "OK")
	if r := c.Do("CLIENT", "SETINFO", "lib-name", "with space"); !r.IsError() {
		t.Errorf("CLIENT SETINFO lib-name with a space: %s, want an error", r)
	}
	if r := c.Do("CLIENT", "SETINFO", "no-such-attr", "x"); !r.IsError() {
		t.Errorf("CLIENT SETINFO of an unknown attribute: %s, want an error", r)
	}
	expectReply(t, c.Do("CLIENT", "SETINFO", "lib-name"), "(error) ERR wrong number of arguments for 'client|setinfo' command")
}
