package acl

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/dfly/dfly/command"
)

type keyPattern struct {
	pat         string
	read, write bool
}

// Rules is one version of a user's rules; never changed once published.
type Rules struct {
	name      string
	enabled   bool
	nopass    bool
	passwords []string // SHA-256, hex
	// Commands: allowed by command, plus first arguments allowed or denied
	// apart from their command ("config|get"); rules is how ACL LIST
	// shows them.
	allowed    map[*command.Command]bool
	allowedSub map[string]bool
	deniedSub  map[string]bool
	rules      []string
	allKeys    bool
	keys       []keyPattern
	allChans   bool
	channels   []string
	// unrestricted: every command, key and channel (the check's fast path).
	unrestricted bool
}

// Unrestricted reports whether r allows every command, key and channel:
// Check would allow anything.
func (r *Rules) Unrestricted() bool { return r.unrestricted }

// NoPass reports whether the user needs no password.
func (r *Rules) NoPass() bool { return r.nopass }

// newRules are the rules of a user nobody configured: the default user's
// (on, no password, every permission) when all, else a new SETUSER
// user's (off, no permissions).
func newRules(t *command.Table, name string, all bool) *Rules {
	r := &Rules{name: name}
	if all {
		r.enabled, r.nopass, r.allKeys, r.allChans = true, true, true, true
	}
	r.setAll(t, all)
	return r
}

func hashPassword(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:])
}

// GeneratePassword is ACL GENPASS: bits random bits in hex.
func GeneratePassword(bits int) string {
	b := make([]byte, (bits+7)/8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:(bits+3)/4]
}

func (r *Rules) clone() *Rules {
	c := *r
	c.passwords = append([]string(nil), r.passwords...)
	c.allowed = make(map[*command.Command]bool, len(r.allowed))
	for k, v := range r.allowed {
		c.allowed[k] = v
	}
	c.allowedSub, c.deniedSub = cloneSet(r.allowedSub), cloneSet(r.deniedSub)
	c.rules = append([]string(nil), r.rules...)
	c.keys = append([]keyPattern(nil), r.keys...)
	c.channels = append([]string(nil), r.channels...)
	return &c
}

func cloneSet(m map[string]bool) map[string]bool {
	c := make(map[string]bool, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// finish computes the derived fields and returns r.
func (r *Rules) finish() *Rules {
	all := r.enabled && r.allKeys && r.allChans && len(r.deniedSub) == 0
	for _, ok := range r.allowed {
		all = all && ok
	}
	r.unrestricted = all && len(r.rules) == 1 && r.rules[0] == "+@all"
	return r
}

// setAll allows (or denies) every command.
func (r *Rules) setAll(t *command.Table, on bool) {
	r.allowed = make(map[*command.Command]bool, len(t.ByName))
	for _, c := range t.ByName {
		r.allowed[c] = on
		for _, s := range c.Subs {
			r.allowed[s] = on
		}
	}
	r.allowedSub, r.deniedSub = map[string]bool{}, map[string]bool{}
	if on {
		r.rules = []string{"+@all"}
	} else {
		r.rules = []string{"-@all"}
	}
}

// addRule records a command rule for ACL LIST, replacing an earlier one of
// the same command or category.
func (r *Rules) addRule(rule string) {
	out := r.rules[:0:0]
	for _, old := range r.rules {
		if old[1:] != rule[1:] {
			out = append(out, old)
		}
	}
	r.rules = append(out, rule)
}

// apply applies one SETUSER rule; the error is the reason Redis gives.
func (r *Rules) apply(t *command.Table, rule string) string {
	low := strings.ToLower(rule)
	switch low {
	case "on":
		r.enabled = true
		return ""
	case "off":
		r.enabled = false
		return ""
	case "nopass":
		r.nopass, r.passwords = true, nil
		return ""
	case "resetpass":
		r.nopass, r.passwords = false, nil
		return ""
	case "allkeys":
		r.allKeys, r.keys = true, nil
		return ""
	case "resetkeys":
		r.allKeys, r.keys = false, nil
		return ""
	case "allchannels":
		r.allChans, r.channels = true, nil
		return ""
	case "resetchannels":
		r.allChans, r.channels = false, nil
		return ""
	case "allcommands", "+@all":
		r.setAll(t, true)
		return ""
	case "nocommands", "-@all":
		r.setAll(t, false)
		return ""
	case "reset":
		for _, rr := range []string{"resetpass", "resetkeys", "resetchannels", "off", "-@all"} {
			r.apply(t, rr)
		}
		return ""
	case "clearselectors", "sanitize-payload", "skip-sanitize-payload":
		return ""
	}
	switch {
	case rule[0] == '>':
		h := hashPassword(rule[1:])
		for _, p := range r.passwords {
			if p == h {
				r.nopass = false
				return ""
			}
		}
		r.passwords, r.nopass = append(r.passwords, h), false
		return ""
	case rule[0] == '#':
		h := rule[1:]
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
		}
		for _, p := range r.passwords {
			if p == h {
				return ""
			}
		}
		r.passwords, r.nopass = append(r.passwords, h), false
		return ""
	case rule[0] == '<' || rule[0] == '!':
		h := rule[1:]
		if rule[0] == '<' {
			h = hashPassword(h)
		}
		for i, p := range r.passwords {
			if p == h {
				r.passwords = append(r.passwords[:i:i], r.passwords[i+1:]...)
				return ""
			}
		}
		return "The password you are trying to remove from the user does not exist"
	case rule[0] == '~' || rule[0] == '%':
		p := keyPattern{read: true, write: true}
		if rule[0] == '%' {
			perm, pat, ok := strings.Cut(rule[1:], "~")
			if !ok || perm == "" || strings.Trim(strings.ToUpper(perm), "RW") != "" {
				return "Syntax error"
			}
			up := strings.ToUpper(perm)
			p.read, p.write, p.pat = strings.Contains(up, "R"), strings.Contains(up, "W"), pat
		} else {
			p.pat = rule[1:]
		}
		if r.allKeys {
			return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
		}
		if p.pat == "*" && p.read && p.write {
			r.allKeys, r.keys = true, nil
			return ""
		}
		r.keys = append(r.keys, p)
		return ""
	case rule[0] == '&':
		if r.allChans {
			return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
		}
		if rule[1:] == "*" {
			r.allChans, r.channels = true, nil
			return ""
		}
		r.channels = append(r.channels, rule[1:])
		return ""
	case rule[0] == '(':
		return "Selectors are not supported"
	case rule[0] == '+' || rule[0] == '-':
		return r.applyCommandRule(t, rule[0] == '+', low[1:])
	}
	return "Syntax error"
}

func (r *Rules) applyCommandRule(t *command.Table, allow bool, target string) string {
	sign := "-"
	if allow {
		sign = "+"
	}
	if cat, ok := strings.CutPrefix(target, "@"); ok {
		bit := command.CategoryBit(cat)
		if bit == 0 {
			return "Unknown command or category name in ACL"
		}
		for _, c := range t.ByName {
			if c.Cats&bit != 0 && c.Subs == nil {
				r.allowed[c] = allow
				r.clearSubs(c.Name)
			}
			for _, s := range c.Subs {
				if s.Cats&bit != 0 {
					r.allowed[s] = allow
				}
			}
		}
		r.addRule(sign + target)
		return ""
	}
	name, sub, hasSub := strings.Cut(target, "|")
	c := t.ByName[name]
	if c == nil || (hasSub && (sub == "" || strings.Contains(sub, "|"))) {
		return "Unknown command or category name in ACL"
	}
	if s := c.Subs[sub]; hasSub && s != nil {
		r.allowed[s] = allow
	} else if hasSub && c.Subs != nil {
		return "Unknown command or category name in ACL"
	} else if hasSub {
		if allow {
			delete(r.deniedSub, target)
			if !r.allowed[c] {
				r.allowedSub[target] = true
			}
		} else {
			delete(r.allowedSub, target)
			if r.allowed[c] {
				r.deniedSub[target] = true
			}
		}
	} else {
		r.allowed[c] = allow
		r.clearSubs(name)
		for _, s := range c.Subs {
			r.allowed[s] = allow
		}
	}
	r.addRule(sign + target)
	return ""
}

// clearSubs drops the first-argument rules of command name (a rule for the
// whole command replaces them).
func (r *Rules) clearSubs(name string) {
	for k := range r.allowedSub {
		if strings.HasPrefix(k, name+"|") {
			delete(r.allowedSub, k)
		}
	}
	for k := range r.deniedSub {
		if strings.HasPrefix(k, name+"|") {
			delete(r.deniedSub, k)
		}
	}
}

// Describe is the user as ACL LIST shows it (and the ACL file holds it).
func (r *Rules) Describe() string {
	var b strings.Builder
	b.WriteString("user " + r.name)
	if r.enabled {
		b.WriteString(" on")
	} else {
		b.WriteString(" off")
	}
	if r.nopass {
		b.WriteString(" nopass")
	}
	for _, p := range r.passwords {
		b.WriteString(" #" + p)
	}
	if k := r.KeyPatterns(); k != "" {
		b.WriteString(" " + k)
	}
	if r.allChans {
		b.WriteString(" &*")
	} else {
		b.WriteString(" resetchannels")
		for _, c := range r.channels {
			b.WriteString(" &" + c)
		}
	}
	b.WriteString(" " + r.CommandRules())
	return b.String()
}

// Flags are the user's flags as ACL GETUSER lists them.
func (r *Rules) Flags() []string {
	flags := []string{"off"}
	if r.enabled {
		flags[0] = "on"
	}
	if r.nopass {
		flags = append(flags, "nopass")
	}
	return flags
}

// Passwords are the user's password hashes (SHA-256, hex).
func (r *Rules) Passwords() []string { return r.passwords }

// CommandRules are the user's command rules as ACL GETUSER shows them.
func (r *Rules) CommandRules() string { return strings.Join(r.rules, " ") }

// KeyPatterns are the user's key patterns as ACL GETUSER shows them.
func (r *Rules) KeyPatterns() string {
	if r.allKeys {
		return "~*"
	}
	parts := make([]string, 0, len(r.keys))
	for _, k := range r.keys {
		switch {
		case k.read && k.write:
			parts = append(parts, "~"+k.pat)
		case k.read:
			parts = append(parts, "%R~"+k.pat)
		default:
			parts = append(parts, "%W~"+k.pat)
		}
	}
	return strings.Join(parts, " ")
}

// ChannelPatterns are the user's channel patterns as ACL GETUSER shows
// them.
func (r *Rules) ChannelPatterns() string {
	if r.allChans {
		return "&*"
	}
	parts := make([]string, 0, len(r.channels))
	for _, c := range r.channels {
		parts = append(parts, "&"+c)
	}
	return strings.Join(parts, " ")
}
