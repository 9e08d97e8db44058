package config

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// params.txt is the table of Redis 7.0's parameters (its header explains
// the columns).
//
//go:embed params.txt
var paramsText string

// kind is how a parameter's values are written and checked.
type kind uint8

const (
	kindBool kind = iota
	kindEnum
	kindInt
	kindMemory
	kindMemoryPercent
	kindOctal
	kindString
	kindSpecial
)

var kindNames = map[string]kind{
	"bool": kindBool, "enum": kindEnum, "int": kindInt, "memory": kindMemory,
	"memory%": kindMemoryPercent, "octal": kindOctal, "string": kindString, "special": kindSpecial,
}

// param is one CONFIG GET/SET parameter: a row of params.txt, or one of
// dfly's own (extras), and what it means to dfly when it means something.
type param struct {
	name      string
	kind      kind
	immutable bool
	protected bool
	def       string   // Redis's default, as CONFIG GET shows it
	min, max  uint64   // int: int64 bounds as uint64 bits; memory: unsigned
	values    []string // enum
	alias     string   // the parameter this name is another name of
	// check turns a special value into the form CONFIG GET shows, or
	// refuses it with Redis's text; for a number, it adjusts the value its
	// type accepted.
	check func(v string) (string, error)
	// get and set bind the parameter to dfly's configuration (bound.go);
	// set receives the checked form. Nil: the value is only stored.
	get func(c *Config) string
	set func(c *Config, v string) error
}

// normalize checks v as the parameter's type and returns the form CONFIG
// GET shows, or the error text Redis gives.
func (p *param) normalize(v string) (string, error) {
	switch p.kind {
	case kindBool:
		switch strings.ToLower(v) {
		case "yes":
			return "yes", nil
		case "no":
			return "no", nil
		}
		return "", errors.New("argument must be 'yes' or 'no'")
	case kindEnum:
		for _, e := range p.values {
			if strings.EqualFold(e, v) {
				return e, nil
			}
		}
		if p.check != nil {
			return p.check(v) // dfly's own values (maxmemory-policy's allkeys-tinylfu)
		}
		return "", errors.New("argument(s) must be one of the following: " + strings.Join(p.values, ", "))
	case kindInt:
		n, ok := string2ll(v)
		if !ok {
			return "", errors.New("argument couldn't be parsed into an integer")
		}
		if n < int64(p.min) || n > int64(p.max) {
			return "", fmt.Errorf("argument must be between %d and %d inclusive", int64(p.min), int64(p.max))
		}
		return p.adjust(strconv.FormatInt(n, 10))
	case kindMemory:
		n, ok := memtoull(v)
		if !ok {
			return "", errors.New("argument must be a memory value")
		}
		if n < p.min || n > p.max {
			return "", fmt.Errorf("argument must be between %d and %d inclusive", p.min, p.max)
		}
		return p.adjust(strconv.FormatUint(n, 10))
	case kindMemoryPercent:
		if pct, ok := strings.CutSuffix(v, "%"); ok {
			n, ok := string2ll(pct)
			if !ok || n < 0 {
				return "", errors.New("argument must be a memory or percent value")
			}
			if n > 100 {
				return "", errors.New("percentage argument must be less or equal to 100")
			}
			if n == 0 {
				return "0", nil
			}
			return strconv.FormatInt(n, 10) + "%", nil
		}
		n, ok := memtoull(v)
		if !ok || n > math.MaxInt64 {
			return "", errors.New("argument must be a memory or percent value")
		}
		return strconv.FormatUint(n, 10), nil
	case kindOctal:
		n, err := strconv.ParseUint(v, 8, 32)
		if err != nil {
			return "", errors.New("argument couldn't be parsed as an octal number")
		}
		return strconv.FormatUint(n, 8), nil
	case kindSpecial:
		if p.check != nil {
			return p.check(v)
		}
	}
	return v, nil
}

// adjust applies a number's own rule after its type's (hz's clamp).
func (p *param) adjust(v string) (string, error) {
	if p.check != nil {
		return p.check(v)
	}
	return v, nil
}

// string2ll is Redis's strict integer syntax: an optional minus, then "0"
// or digits without a leading zero; no plus, no spaces, no overflow.
func string2ll(s string) (int64, bool) {
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 1 && d[0] == '0' || d == "0" && len(s) > 1 {
		return 0, false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// parseParams reads params.txt.
func parseParams(text string) ([]param, error) {
	var out []param
	index := map[string]int{}
	for ln, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		fail := func(format string, a ...any) error {
			return fmt.Errorf("params.txt:%d: %s", ln+1, fmt.Sprintf(format, a...))
		}
		if rest, ok := strings.CutPrefix(line, "alias "); ok {
			name, target, ok := strings.Cut(rest, "=")
			name, target = strings.TrimSpace(name), strings.TrimSpace(target)
			i, found := index[target]
			if !ok || !found {
				return nil, fail("bad alias %q", rest)
			}
			p := out[i]
			p.name, p.alias = name, target
			out = append(out, p)
			continue
		}
		// name type flags "default" range
		f := strings.Fields(line)
		if len(f) < 4 {
			return nil, fail("too few columns")
		}
		q := strings.Index(line, `"`)
		end := strings.LastIndex(line, `"`)
		if q < 0 || end <= q {
			return nil, fail("default is not quoted")
		}
		def, err := strconv.Unquote(line[q : end+1])
		if err != nil {
			return nil, fail("default: %v", err)
		}
		p := param{name: f[0], def: def}
		k, ok := kindNames[f[1]]
		if !ok {
			return nil, fail("unknown type %q", f[1])
		}
		p.kind = k
		for _, fl := range strings.Split(f[2], ",") {
			switch fl {
			case "immutable":
				p.immutable = true
			case "protected":
				p.protected = true
			case "-":
			default:
				return nil, fail("unknown flag %q", fl)
			}
		}
		rng := strings.TrimSpace(line[end+1:])
		switch k {
		case kindEnum:
			p.values = strings.Split(rng, ",")
		case kindInt, kindMemory, kindMemoryPercent:
			lo, hi, ok := strings.Cut(rng, "..")
			var e1, e2 error
			p.min, e1 = bound(lo)
			p.max, e2 = bound(hi)
			if !ok || e1 != nil || e2 != nil {
				return nil, fail("bad range %q", rng)
			}
		}
		if _, err := p.normalize(def); err != nil && k != kindSpecial {
			return nil, fail("default %q: %v", def, err)
		}
		index[p.name] = len(out)
		out = append(out, p)
	}
	return out, nil
}

// bound reads one end of a range: a number or a C limit's name.
func bound(s string) (uint64, error) {
	switch s {
	case "INT64_MAX":
		return math.MaxInt64, nil
	case "UINT64_MAX":
		return math.MaxUint64, nil
	case "INT_MAX":
		return math.MaxInt32, nil
	case "INT_MIN":
		n := int64(math.MinInt32)
		return uint64(n), nil // int bounds are kept as int64 bits
	case "UINT_MAX":
		return math.MaxUint32, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return uint64(n), err
}
