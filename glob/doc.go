// Package glob implements Redis's glob-style matcher (stringmatchlen in
// Redis's util.c), as used by KEYS, SCAN MATCH, PSUBSCRIBE, CONFIG GET and
// friends.
//
// It owns one thing: deciding whether a pattern matches a byte string, with
// Redis 7's exact semantics, quirks included:
//
//   - '*' matches any run of bytes, '?' exactly one byte, '\' escapes the
//     next byte (a trailing '\' matches itself).
//   - '[abc]', '[^abc]', '[a-z]' match one byte; reversed ranges ('[z-a]')
//     are swapped; range bounds compare as signed chars, as in C on x86
//     (so bytes >= 0x80 sort below 'a'); an unterminated class ('[abc')
//     ends the pattern and matches what it has collected so far; a lone '['
//     matches nothing.
//   - At the top level an empty string matches only the empty pattern: "*"
//     does NOT match "". Redis's KEYS and SCAN treat the pattern "*" as
//     "everything" before ever calling the matcher; callers must do the same.
//   - nocase folds ASCII letters only.
//
// It never allocates and never recurses deeper than 1000 levels: like
// Redis 7 (its CVE-2022-36021 and nesting fixes) a pattern that needs more
// than 1000 nested '*' expansions does not match, and once the tail after a
// '*' has failed at every position the search stops rather than trying longer
// matches for earlier stars, so time is bounded by O(len(pattern)·len(s)).
package glob
