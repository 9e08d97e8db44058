package command

// What the external tests (info_test.go, which needs every family
// registered, so the server linked) read of unexported metadata.

var (
	LegacyRange   = legacyRange
	ParseKeySpecs = parseKeySpecs
)

func (c *Command) Specs() []keySpec                     { return c.specs }
func (c *Command) InfoSub(sub []byte) *Command          { return c.infoSub(sub) }
func (s keySpec) UnknownBegin() bool                    { return s.unknownBegin }
func (s keySpec) Flags() []string                       { return s.flags }
func (s keySpec) Positions(dst []int, a [][]byte) []int { return s.positions(dst, a) }
