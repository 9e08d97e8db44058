package resp

import "bytes"

// splitArgs splits an inline line into arguments as Redis's sdssplitargs
// does. redcon's telnet parser differs in too many ways to patch (no \xHH,
// \a, \b; escapes inside single quotes; quotes only at an argument's start;
// splitting on ' ' only; an allocation per argument), so this is a port.
//
// Unquoted arguments alias line. Quoted ones are unescaped in place, which
// only ever shrinks them; a dry run first makes sure the line is valid so
// that a rejected line is left untouched.
func splitArgs(line []byte, args [][]byte) ([][]byte, error) {
	if bytes.IndexByte(line, '"') < 0 && bytes.IndexByte(line, '\'') < 0 {
		return scanArgs(line, args, true, false)
	}
	if _, err := scanArgs(line, nil, false, false); err != nil {
		return nil, err
	}
	return scanArgs(line, args, true, true)
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexValue(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// scanArgs walks line once. With collect it appends the arguments to args;
// with rewrite it writes unescaped bytes back into line (needed only when
// the line has quotes; without quotes every argument is a plain subslice).
func scanArgs(line []byte, args [][]byte, collect, rewrite bool) ([][]byte, error) {
	n := len(line)
	i := 0
	for {
		for i < n && isSpace(line[i]) {
			i++
		}
		if i == n {
			return args, nil
		}
		start, w := i, i
		emit := func(c byte) {
			if rewrite {
				line[w] = c
			}
			w++
		}
		inDouble, inSingle := false, false
	token:
		for {
			switch {
			case inDouble:
				switch {
				case i == n:
					return nil, ErrUnbalancedQuotes
				case line[i] == '\\' && i+3 < n && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					emit(hexValue(line[i+2])<<4 | hexValue(line[i+3]))
					i += 4
				case line[i] == '\\' && i+1 < n:
					c := line[i+1]
					switch c {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					}
					emit(c)
					i += 2
				case line[i] == '"':
					// A closing quote must end the argument.
					if i+1 < n && !isSpace(line[i+1]) {
						return nil, ErrUnbalancedQuotes
					}
					i++
					break token
				default:
					emit(line[i])
					i++
				}
			case inSingle:
				switch {
				case i == n:
					return nil, ErrUnbalancedQuotes
				case line[i] == '\\' && i+1 < n && line[i+1] == '\'':
					emit('\'')
					i += 2
				case line[i] == '\'':
					if i+1 < n && !isSpace(line[i+1]) {
						return nil, ErrUnbalancedQuotes
					}
					i++
					break token
				default:
					emit(line[i])
					i++
				}
			default:
				if i == n {
					break token
				}
				switch line[i] {
				case ' ', '\n', '\r', '\t': // not \v or \f: sdssplitargs's own list
					i++
					break token
				case '"':
					inDouble = true
				case '\'':
					inSingle = true
				default:
					emit(line[i])
				}
				i++
			}
		}
		if collect {
			args = append(args, line[start:w:w])
		}
	}
}
