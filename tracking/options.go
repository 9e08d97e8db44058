package tracking

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dfly/dfly/resp"
)

// Options is a client's CLIENT TRACKING configuration; replaced whole
// (Client.Set), read from shard goroutines.
type Options struct {
	BCAST, OptIn, OptOut, NoLoop bool
	Redirect                     int64
	// Prefixes: BCAST's, sorted (Redis's prefix table is a radix tree);
	// BCAST without PREFIX has the one prefix "".
	Prefixes []string
}

// Redis's error texts for CLIENT TRACKING and CLIENT CACHING.
const (
	errSyntax      = "ERR syntax error"
	errNotInt      = "ERR value is not an integer or out of range"
	errOneRedirect = "ERR A client can only redirect to a single other client"
	errPrefixBCAST = "ERR PREFIX option requires BCAST mode to be enabled"
	errSwitchBCAST = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	errOptBCAST    = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	errOptBoth     = "ERR You can't specify both OPTIN mode and OPTOUT mode"
	errSwitchOpt   = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	errNoTarget    = "ERR The client ID you want redirect to does not exist"
	errCachingMode = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	errCachingYes  = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	errCachingNo   = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
)

// Parse reads CLIENT TRACKING's arguments (a[2] on|off, then options) for
// a client whose configuration is old (nil: not tracking), with Redis's
// checks in Redis's order; exists tells whether a REDIRECT target is
// connected. It returns the new configuration (nil: OFF) or Redis's error
// text.
func Parse(a [][]byte, old *Options, exists func(id int64) bool) (*Options, string) {
	o := &Options{}
	var prefixes []string
	for j := 3; j < len(a); j++ {
		more := j+1 < len(a)
		switch opt := strings.ToLower(string(a[j])); {
		case opt == "redirect" && more:
			j++
			if o.Redirect != 0 {
				return nil, errOneRedirect
			}
			id, err := strconv.ParseInt(string(a[j]), 10, 64)
			if err != nil {
				return nil, errNotInt
			}
			if !exists(id) {
				return nil, errNoTarget
			}
			o.Redirect = id
		case opt == "bcast":
			o.BCAST = true
		case opt == "optin":
			o.OptIn = true
		case opt == "optout":
			o.OptOut = true
		case opt == "noloop":
			o.NoLoop = true
		case opt == "prefix" && more:
			j++
			prefixes = append(prefixes, string(a[j]))
		default:
			return nil, errSyntax
		}
	}
	switch strings.ToLower(string(a[2])) {
	case "on":
	case "off":
		return nil, ""
	default:
		return nil, errSyntax
	}
	switch {
	case !o.BCAST && len(prefixes) > 0:
		return nil, errPrefixBCAST
	case old != nil && old.BCAST != o.BCAST:
		return nil, errSwitchBCAST
	case o.BCAST && (o.OptIn || o.OptOut):
		return nil, errOptBCAST
	case o.OptIn && o.OptOut:
		return nil, errOptBoth
	case old != nil && (o.OptIn && old.OptOut || o.OptOut && old.OptIn):
		return nil, errSwitchOpt
	}
	if !o.BCAST {
		return o, ""
	}
	var have []string
	if old != nil {
		have = old.Prefixes
	}
	if e := prefixCollision(have, prefixes); e != "" {
		return nil, e
	}
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	// Redis adds the new prefixes to those it had.
	o.Prefixes = append(slices.Clone(have), prefixes...)
	slices.Sort(o.Prefixes)
	o.Prefixes = slices.Compact(o.Prefixes)
	return o, ""
}

// prefixCollision is Redis's refusal of prefixes of which one starts with
// another, among those a client has and those it adds.
func prefixCollision(have, add []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range add {
		for _, h := range have {
			if overlap(p, h) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + h + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// CheckCaching is CLIENT CACHING yes|no's check against o (nil: not
// tracking): Redis's error text, or "" when the flag may be set.
func CheckCaching(o *Options, arg []byte) string {
	if o == nil {
		return errCachingMode
	}
	switch strings.ToLower(string(arg)) {
	case "yes":
		if !o.OptIn {
			return errCachingYes
		}
	case "no":
		if !o.OptOut {
			return errCachingNo
		}
	default:
		return errSyntax
	}
	return ""
}

// Tracks reports whether the next command's keys are remembered, given
// CLIENT CACHING's flag for it (caching).
func (o *Options) Tracks(caching bool) bool {
	return o != nil && !o.BCAST && !(o.OptIn && !caching || o.OptOut && caching)
}

// WriteInfo writes CLIENT TRACKINGINFO's reply for c (nil: never tracked)
// with CLIENT CACHING's flag for the next command.
func WriteInfo(w *resp.Writer, c *Client, caching bool) {
	var o *Options
	if c != nil {
		o = c.Options()
	}
	flags := []string{"off"}
	redirect := int64(-1)
	var prefixes []string
	if o != nil {
		flags = []string{"on"}
		if o.BCAST {
			flags = append(flags, "bcast")
		}
		if o.OptIn {
			flags = append(flags, "optin")
			if caching {
				flags = append(flags, "caching-yes")
			}
		}
		if o.OptOut {
			flags = append(flags, "optout")
			if caching {
				flags = append(flags, "caching-no")
			}
		}
		if o.NoLoop {
			flags = append(flags, "noloop")
		}
		if c.broken.Load() {
			flags = append(flags, "broken_redirect")
		}
		redirect, prefixes = o.Redirect, o.Prefixes
	}
	w.Map(3)
	w.BulkString("flags")
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("redirect")
	w.Int(redirect)
	w.BulkString("prefixes")
	w.Array(len(prefixes))
	for _, p := range prefixes {
		w.BulkString(p)
	}
}
