package client

import (
	"strconv"
	"strings"
	"time"
)

const errSyntax = "ERR syntax error"

// Filter is CLIENT KILL's filters (Redis 7.0's, and 7.4's MAXAGE) or
// CLIENT LIST's (TYPE, or ID with several ids).
type Filter struct {
	IDs               []int64 // any of them; none: any
	Addr, LAddr, User string
	Type              Type
	AnyType, SkipMe   bool
	MaxAge            int64 // seconds; 0: any
}

// ParseKill reads CLIENT KILL's <filter> <value> pairs (args after KILL);
// userExists tells whether USER names a user. The error reply on failure.
func ParseKill(args [][]byte, userExists func(string) bool) (Filter, string) {
	f := Filter{AnyType: true, SkipMe: true}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return f, errSyntax
		}
		v := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "id":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return f, "ERR client-id should be greater than 0"
			}
			f.IDs = append(f.IDs[:0], n)
		case "type":
			t, ok := ParseType(v)
			if !ok {
				return f, "ERR Unknown client type '" + v + "'"
			}
			f.Type, f.AnyType = t, false
		case "addr":
			f.Addr = v
		case "laddr":
			f.LAddr = v
		case "user":
			if !userExists(v) {
				return f, "ERR No such user '" + v + "'"
			}
			f.User = v
		case "skipme":
			switch strings.ToLower(v) {
			case "yes":
				f.SkipMe = true
			case "no":
				f.SkipMe = false
			default:
				return f, errSyntax
			}
		case "maxage":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return f, errSyntax
			}
			f.MaxAge = n
		default:
			return f, errSyntax
		}
	}
	return f, ""
}

// ParseList reads CLIENT LIST's arguments after LIST: none, TYPE <type>,
// or ID <id> [<id> ...] (listed in that order, as Redis 7.0). The error
// reply on failure.
func ParseList(args [][]byte) (Filter, string) {
	f := Filter{AnyType: true}
	switch {
	case len(args) == 0:
	case len(args) == 2 && strings.EqualFold(string(args[0]), "type"):
		t, ok := ParseType(string(args[1]))
		if !ok {
			return f, "ERR Unknown client type '" + string(args[1]) + "'"
		}
		f.Type, f.AnyType = t, false
	case len(args) > 1 && strings.EqualFold(string(args[0]), "id"):
		for _, a := range args[1:] {
			n, err := strconv.ParseInt(string(a), 10, 64)
			if err != nil {
				return f, "ERR Invalid client ID"
			}
			f.IDs = append(f.IDs, n)
		}
	default:
		return f, errSyntax
	}
	return f, ""
}

// Match reports whether client i passes every filter but IDs; self: i is
// the caller.
func (f *Filter) Match(i *Info, self bool, now time.Time) bool {
	return !(f.SkipMe && self) && (f.AnyType || i.Type() == f.Type) &&
		(f.Addr == "" || i.Addr == f.Addr) && (f.LAddr == "" || i.LAddr == f.LAddr) &&
		(f.User == "" || i.User == f.User) && (f.MaxAge == 0 || int64(now.Sub(i.Created)/time.Second) >= f.MaxAge)
}
