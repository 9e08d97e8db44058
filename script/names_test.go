package script

import (
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/parse"
)

func TestScriptNamesCommands(t *testing.T) {
	for _, c := range []struct {
		body  string
		names bool
	}{
		{"return redis.call('GET', KEYS[1])", true},
		{"local v = redis.pcall('INCR', KEYS[1]) if v then return redis.status_reply('OK') end", true},
		{"local t = {} for i = 1, 3 do t[i] = redis.call(\"GET\", KEYS[i]) end table.sort(t) return t", true},
		{"local f = function(k) return redis['call']('GET', k) end return f(KEYS[1])", true},
		{"return cjson.encode({redis.sha1hex('x'), #ARGV, -1, not true})", true},
		{"return redis.call(ARGV[1], KEYS[1])", false},
		{"return redis.call('S' .. 'ORT', KEYS[1])", false},
		{"return redis.pcall(string.upper(ARGV[1]), KEYS[1])", false},
		{"local r = redis return r.call('GET', KEYS[1])", false},
		// A local bound to redis.call is a name for it (BullMQ's rcall).
		{"local c = redis.call return c('GET', KEYS[1])", true},
		{"local rcall, n = redis.pcall, 1 local ok = rcall('SET', KEYS[1], n) return ok", true},
		{"local rcall = redis.call return rcall(ARGV[1], KEYS[1])", false},
		{"local rcall = redis.call local f = rcall return f('DBSIZE')", false},
		{"local rcall = redis.call rcall = unpack return rcall('GET', KEYS[1])", false},
		{"local function g() return rcall(ARGV[1]) end local rcall = redis.call return g()", false},
		{"local rcall = redis.call return rcall:x('GET')", false},
		{"return pcall(redis.call, 'GET', KEYS[1])", false},
		{"for k, f in pairs(redis) do end", false},
		{"return _G.redis.call('GET', KEYS[1])", false},
		{"return rawget(redis, 'call')('GET', KEYS[1])", false},
		{"return redis[ARGV[1]]('GET', KEYS[1])", false},
		{"return loadstring('return 1')()", false},
		{"return redis:call('GET')", false},
		{"local function g() return redis.call(ARGV[2]) end return g()", false},
	} {
		chunk, err := parse.Parse(strings.NewReader(c.body), "@test")
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if got, _ := namesCommands(chunk); got != c.names {
			t.Errorf("%s: names its commands %v, want %v", c.body, got, c.names)
		}
	}
}

// TestScriptNamesCommandsNames: the literal names a script calls, through
// redis.call, redis.pcall or a local alias of either.
func TestScriptNamesCommandsNames(t *testing.T) {
	body := "local rcall = redis.call\nredis.pcall('SET', KEYS[1], 1)\nif rcall('exists', KEYS[2]) == 1 then return redis.call('DBSIZE') end"
	chunk, err := parse.Parse(strings.NewReader(body), "@test")
	if err != nil {
		t.Fatal(err)
	}
	ok, names := namesCommands(chunk)
	if !ok || strings.Join(names, ",") != "SET,exists,DBSIZE" {
		t.Fatalf("got %v %q, want true SET,exists,DBSIZE", ok, names)
	}
}
