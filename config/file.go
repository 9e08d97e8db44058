package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A configuration file is redis.conf's syntax: one directive per line, a
// name and its arguments (quoted as Redis's sdssplitargs: "..." with
// escapes, '...'), '#' comments, blank lines, and include. The names are
// the flags' (dfly_style and redis-style both: a '-' and a '_' are the
// same), so a directive is the flag --name with its arguments joined by
// spaces; cmd/dfly puts the file's directives before the command line's
// flags, which therefore win, as in Redis. Repeated save lines add up
// (save "" clears them), as Redis's.

// FileError is a directive the file cannot hold, with Redis's wording.
type FileError struct {
	File string
	Line int
	Text string
	Why  string
}

func (e *FileError) Error() string {
	return fmt.Sprintf("*** FATAL CONFIG FILE ERROR ***\nReading the configuration file %s, at line %d\n>>> '%s'\n%s",
		e.File, e.Line, e.Text, e.Why)
}

// Directive is one line of a configuration file that names a setting.
type Directive struct {
	Name string   // lower case, as written
	Args []string // unquoted
}

// ReadFile parses a configuration file (and the files it includes) into
// its directives, in order.
func ReadFile(path string) ([]Directive, error) {
	return readFile(path, 0)
}

func readFile(path string, depth int) ([]Directive, error) {
	if depth > 10 {
		return nil, fmt.Errorf("config file %s: includes nested too deep", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Fatal error, can't open config file '%s': %w", path, err)
	}
	var out []Directive
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		args, err := SplitArgs(trimmed)
		if err != nil {
			return nil, &FileError{path, i + 1, line, "Unbalanced quotes in configuration line"}
		}
		name := strings.ToLower(args[0])
		if name == "include" {
			if len(args) != 2 {
				return nil, &FileError{path, i + 1, line, "Bad directive or wrong number of arguments"}
			}
			inc := args[1]
			if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(path), inc)
			}
			more, err := readFile(inc, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
			continue
		}
		if len(args) < 2 {
			return nil, &FileError{path, i + 1, line, "Bad directive or wrong number of arguments"}
		}
		out = append(out, Directive{Name: name, Args: args[1:]})
	}
	return out, nil
}

// FlagArgs turns directives into command-line flags ("--name", "value"
// pairs), naming each by the flag known reports (the name as written, or
// with '-' and '_' swapped); an unknown name is an error naming it.
func FlagArgs(file string, ds []Directive, known func(string) bool) ([]string, error) {
	var out []string
	var saves []string
	sawSave := false
	for _, d := range ds {
		name := flagName(d.Name, known)
		if name == "" {
			return nil, &FileError{file, 0, d.Name + " " + strings.Join(d.Args, " "), "Bad directive or wrong number of arguments"}
		}
		value := strings.Join(d.Args, " ")
		if name == "save" {
			sawSave = true
			if value == "" {
				saves = saves[:0]
			} else {
				saves = append(saves, value)
			}
			continue
		}
		out = append(out, "--"+name, value)
	}
	if sawSave {
		out = append(out, "--save", strings.Join(saves, " "))
	}
	return out, nil
}

// flagName is the flag a directive names, "" when none.
func flagName(name string, known func(string) bool) string {
	for _, n := range []string{name, strings.ReplaceAll(name, "-", "_"), strings.ReplaceAll(name, "_", "-")} {
		if known(n) {
			return n
		}
	}
	return ""
}

// SplitArgs splits a line as Redis's sdssplitargs: words separated by
// spaces; "..." with \n \r \t \b \a \\ \" and \xHH escapes; '...' with \'.
// A closing quote must be followed by a space or the end.
func SplitArgs(line string) ([]string, error) {
	var out []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n') {
			i++
		}
		if i >= len(line) {
			return out, nil
		}
		var cur strings.Builder
		inq, insq := false, false
		for done := false; !done; {
			switch {
			case inq:
				if i >= len(line) {
					return nil, errors.New("unbalanced quotes")
				}
				if line[i] == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]) {
					cur.WriteByte(hexVal(line[i+2])<<4 | hexVal(line[i+3]))
					i += 3
				} else if line[i] == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						cur.WriteByte('\n')
					case 'r':
						cur.WriteByte('\r')
					case 't':
						cur.WriteByte('\t')
					case 'b':
						cur.WriteByte('\b')
					case 'a':
						cur.WriteByte('\a')
					default:
						cur.WriteByte(line[i])
					}
				} else if line[i] == '"' {
					if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
						return nil, errors.New("unbalanced quotes")
					}
					done = true
				} else {
					cur.WriteByte(line[i])
				}
			case insq:
				if i >= len(line) {
					return nil, errors.New("unbalanced quotes")
				}
				if line[i] == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					cur.WriteByte('\'')
				} else if line[i] == '\'' {
					if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
						return nil, errors.New("unbalanced quotes")
					}
					done = true
				} else {
					cur.WriteByte(line[i])
				}
			default:
				if i >= len(line) {
					done = true
					continue
				}
				switch line[i] {
				case ' ', '\n', '\r', '\t':
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur.WriteByte(line[i])
				}
			}
			if i < len(line) {
				i++
			}
		}
		out = append(out, cur.String())
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// quoteArg writes one argument so SplitArgs reads it back.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\r\n\"'\\#") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < ' ' || c > '~':
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// rewriteMarker starts the lines CONFIG REWRITE appends, as Redis's.
const rewriteMarker = "# Generated by CONFIG REWRITE"

// Rewrite is CONFIG REWRITE of the file at path: each directive of a
// CONFIG parameter gets the parameter's current value in place (a
// parameter written on several lines keeps the first place; the others
// go), comments, blank lines and every other line stay as they were, and
// the parameters the file lacks whose value differs from dfly's default
// are appended after Redis's marker line. state holds what the server
// alone knows, by directive name (replicaof: "host port", or "" when the
// server is a master, which removes the line). The file is replaced
// atomically (a temporary file renamed over it).
func (c *Config) Rewrite(path string, state map[string]string) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	c.Mu.RLock()
	current := map[string]string{} // directive name -> rendered arguments
	for i := range params {
		p := &params[i]
		if p.alias != "" {
			continue
		}
		current[p.name] = c.value(p)
	}
	c.Mu.RUnlock()
	aliases := map[string]string{} // a name written -> the parameter
	for i := range params {
		p := &params[i]
		aliases[p.name] = p.key()
		aliases[strings.ReplaceAll(p.name, "-", "_")] = p.key()
	}
	for name, v := range state {
		current[name] = v
		aliases[name] = name
	}
	aliases["slaveof"] = "replicaof"
	def := Default()
	def.Mu.RLock()
	defaults := map[string]string{}
	for i := range params {
		defaults[params[i].name] = def.value(&params[i])
	}
	def.Mu.RUnlock()

	written := map[string]bool{}
	var out []string
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(b) == 0 {
		lines = nil
	}
	for _, line := range lines {
		if strings.TrimSpace(line) == rewriteMarker {
			continue
		}
		trimmed := strings.TrimSpace(line)
		args, err := SplitArgs(trimmed)
		if trimmed == "" || trimmed[0] == '#' || err != nil || len(args) == 0 {
			out = append(out, line)
			continue
		}
		name, ok := aliases[strings.ToLower(args[0])]
		if !ok {
			out = append(out, line) // a dfly flag or a line we do not rewrite
			continue
		}
		if written[name] {
			continue
		}
		written[name] = true
		if l := directiveLine(name, current[name]); l != "" {
			out = append(out, l)
		}
	}
	var added []string
	for i := range params {
		p := &params[i]
		name := p.key()
		if p.alias != "" || written[name] || current[name] == defaults[name] {
			continue
		}
		written[name] = true
		if l := directiveLine(name, current[name]); l != "" {
			added = append(added, l)
		}
	}
	for name, v := range state {
		if !written[name] && v != "" {
			added = append(added, directiveLine(name, v))
		}
	}
	if len(added) > 0 {
		out = append(out, rewriteMarker)
		out = append(out, added...)
	}
	text := strings.Join(out, "\n") + "\n"
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// directiveLine writes name with value as a directive: a value of several
// words (save, client-output-buffer-limit, replicaof) as its words, an
// empty one as "". replicaof "" is no line at all.
func directiveLine(name, value string) string {
	if value == "" {
		if name == "replicaof" {
			return ""
		}
		return name + ` ""`
	}
	words := strings.Fields(value)
	if len(words) > 1 && !strings.ContainsAny(value, "\"'\\") && strings.Join(words, " ") == value {
		return name + " " + value
	}
	return name + " " + quoteArg(value)
}
