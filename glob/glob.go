package glob

// maxNesting is Redis's bound on '*' recursion: deeper patterns never match.
const maxNesting = 1000

// Match reports whether s matches pattern, exactly as Redis's
// stringmatchlen does. nocase folds ASCII letters.
func Match(pattern, s []byte, nocase bool) bool {
	var skipLonger bool
	return match(pattern, s, 0, 0, nocase, &skipLonger, 0)
}

// MatchString is Match for strings.
func MatchString(pattern, s string, nocase bool) bool {
	var skipLonger bool
	return match(pattern, s, 0, 0, nocase, &skipLonger, 0)
}

// IsLiteral reports whether pattern has no special bytes, so that it
// matches exactly one string, itself (case-sensitively), and a lookup can
// replace a scan.
func IsLiteral(pattern []byte) bool {
	for _, c := range pattern {
		switch c {
		case '*', '?', '[', '\\':
			return false
		}
	}
	return true
}

// at returns b[i], or 0 past the end: Redis reads the NUL terminator of its
// sds strings in a few places and the port keeps those reads' outcome.
func at[T ~string | ~[]byte](b T, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

func lower(c int) int {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

func sameByte(a, b byte, nocase bool) bool {
	if nocase {
		return lower(int(a)) == lower(int(b))
	}
	return a == b
}

// match matches pattern[p:] against s[i:]. skipLonger is set once the rest of
// the pattern after some '*' failed against every suffix: then no earlier '*'
// can help by matching more, and every level returns at once.
func match[T ~string | ~[]byte](pattern, s T, p, i int, nocase bool, skipLonger *bool, nesting int) bool {
	if nesting > maxNesting {
		return false
	}
	for p < len(pattern) && i < len(s) {
		switch pattern[p] {
		case '*':
			for p+1 < len(pattern) && pattern[p+1] == '*' {
				p++
			}
			if p == len(pattern)-1 {
				return true
			}
			for ; i < len(s); i++ {
				if match(pattern, s, p+1, i, nocase, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
			}
			*skipLonger = true
			return false
		case '?':
			i++
		case '[':
			p++
			negate := at(pattern, p) == '^'
			if negate {
				p++
			}
			matched := false
			for {
				if at(pattern, p) == '\\' && len(pattern)-p >= 2 {
					p++
					if pattern[p] == s[i] {
						matched = true
					}
				} else if at(pattern, p) == ']' {
					break
				} else if p >= len(pattern) {
					// Unterminated class: step back so the p++ below ends the pattern.
					p--
					break
				} else if len(pattern)-p >= 3 && pattern[p+1] == '-' {
					// C compares plain chars, signed on the platforms Redis runs on.
					lo, hi, c := int(int8(pattern[p])), int(int8(pattern[p+2])), int(int8(s[i]))
					if lo > hi {
						lo, hi = hi, lo
					}
					if nocase {
						lo, hi, c = lower(lo), lower(hi), lower(c)
					}
					p += 2
					if c >= lo && c <= hi {
						matched = true
					}
				} else if sameByte(pattern[p], s[i], nocase) {
					matched = true
				}
				p++
			}
			if negate {
				matched = !matched
			}
			if !matched {
				return false
			}
			i++
		case '\\':
			if len(pattern)-p >= 2 {
				p++
			}
			fallthrough
		default:
			if !sameByte(pattern[p], s[i], nocase) {
				return false
			}
			i++
		}
		p++
		if i == len(s) {
			for p < len(pattern) && pattern[p] == '*' {
				p++
			}
			break
		}
	}
	return p == len(pattern) && i == len(s)
}
