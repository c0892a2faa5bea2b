package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// luaProbe is the script Check evaluates: it touches no key, so every
// user that may run lockwatch's scripts may run it, on any node.
const luaProbe = "return 1"

// checkLua refuses a server that cannot run lockwatch's scripts, naming
// the cause: Valkey without its Lua module, EVAL renamed or disabled
// (both answer an error for any script), or an ACL that refuses EVAL. A
// server that is loading its data or running another script can run
// scripts later, and is not called Lua-less.
func checkLua(ctx context.Context, c redis.Cmdable, srv server) error {
	err := c.Eval(ctx, luaProbe, nil).Err()
	var reply redis.Error
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &reply):
		return fmt.Errorf("%s: evaluate a script: %w", srv, err)
	case strings.HasPrefix(err.Error(), "NOPERM"):
		return fmt.Errorf("%s refuses EVAL to this user (every lease operation is a Lua script; grant +eval and +evalsha, SECURITY.md): %w", srv, err)
	case strings.HasPrefix(err.Error(), "LOADING"), strings.HasPrefix(err.Error(), "BUSY"):
		return fmt.Errorf("%s cannot evaluate a script now: %w", srv, err)
	}
	return fmt.Errorf("%s cannot run Lua scripts, which every lease operation is (load Valkey's Lua module, or restore EVAL): EVAL answers %w", srv, err)
}
