package replica

import "testing"

// A dfly sub-replica follows the master a refusing replica names
// (Link.redirected); anything but that refusal is no redirect.
func TestParseRedirect(t *testing.T) {
	for _, c := range []struct {
		line, host string
		port       int
	}{
		{RefusalText + "10.0.0.5:6380", "10.0.0.5", 6380},
		{RefusalText + "[::1]:7000", "::1", 7000},
		{RefusalText + "master.example:6379", "master.example", 6379},
		{RefusalText + "10.0.0.5", "", 0},
		{RefusalText + "10.0.0.5:0", "", 0},
		{RefusalText + "10.0.0.5:70000", "", 0},
		{RefusalText + ":6379", "", 0},
		{"NOMASTERLINK Can't SYNC while not connected with my master", "", 0},
		{"ERR unknown command 'DFLY'", "", 0},
	} {
		rd := parseRedirect(c.line)
		switch {
		case c.port == 0 && rd != nil:
			t.Errorf("%q: redirect to %s:%d, want none", c.line, rd.host, rd.port)
		case c.port != 0 && (rd == nil || rd.host != c.host || rd.port != c.port):
			t.Errorf("%q: %+v, want %s:%d", c.line, rd, c.host, c.port)
		}
	}
	for _, c := range []struct{ link, named, want string }{
		{"10.0.0.7:6379", "127.0.0.1", "10.0.0.7"},
		{"10.0.0.7:6379", "localhost", "10.0.0.7"},
		{"[fd00::7]:6379", "::1", "fd00::7"},
		{"10.0.0.7:6379", "10.0.0.5", "10.0.0.5"},
		{"127.0.0.1:6379", "127.0.0.1", "127.0.0.1"},
	} {
		if got := redirectHost(c.link, c.named); got != c.want {
			t.Errorf("redirectHost(%q, %q) = %q, want %q", c.link, c.named, got, c.want)
		}
	}
}
