package family

import (
	"strconv"

	"github.com/dfly/dfly/command"
)

func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// withKeySpecs gives c its key specs (command.Command.KeySpecs).
func withKeySpecs(c *command.Command, specs string) *command.Command {
	c.KeySpecs = specs
	return c
}

// withKeyFlags gives c's one range of keys its key spec flags
// (command.Command.KeyFlags).
func withKeyFlags(c *command.Command, flags string) *command.Command {
	c.KeyFlags = flags
	return c
}

// withTips gives c Redis 7's command tips (command.Command.Tips).
func withTips(c *command.Command, tips string) *command.Command {
	c.Tips = tips
	return c
}

// withSubcommands describes container c's subcommands.
func withSubcommands(c *command.Command, subs []command.SubcommandInfo) *command.Command {
	c.Subcommands = subs
	return c
}
