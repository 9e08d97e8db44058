package num

// Error is the full text of a Redis error reply, "ERR " prefix included.
// The types/* packages return it (possibly wrapped) so that the server can
// turn any of their errors into a reply with one errors.As.
type Error string

func (e Error) Error() string { return string(e) }

// Error replies of the number commands, as Redis 7.0 words them.
const (
	// ErrNotInt: an integer argument or stored value is not a string2ll integer.
	ErrNotInt Error = "ERR value is not an integer or out of range"
	// ErrOverflow: INCR, INCRBY, DECR, DECRBY (and HINCRBY) would leave int64.
	ErrOverflow Error = "ERR increment or decrement would overflow"
	// ErrDecrOverflow: DECRBY's decrement is -2^63, which cannot be negated.
	ErrDecrOverflow Error = "ERR decrement would overflow"
	// ErrNotFloat: a float argument or stored value is not a valid float.
	ErrNotFloat Error = "ERR value is not a valid float"
	// ErrNaNInf: the INCRBYFLOAT/HINCRBYFLOAT result is NaN or infinite.
	ErrNaNInf Error = "ERR increment would produce NaN or Infinity"
	// ErrSyntax: an option or argument the command does not take.
	ErrSyntax Error = "ERR syntax error"
	// ErrIncrNaNInf: HINCRBYFLOAT's increment itself is infinite ("inf"
	// parses); INCRBYFLOAT has no such check and replies ErrNaNInf instead.
	ErrIncrNaNInf Error = "ERR value is NaN or Infinity"
)
