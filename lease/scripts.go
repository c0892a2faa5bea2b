package lease

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// One Lua script per operation, each run by EVALSHA with EVAL as the
// fallback when the server answers NOSCRIPT (after a restart or a failover
// the script cache is empty). KEYS are passed as KEYS so Cluster routes them.
var (
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/renew.lua
	renewSrc string
	//go:embed scripts/release.lua
	releaseSrc string

	acquireScript = redis.NewScript(acquireSrc)
	renewScript   = redis.NewScript(renewSrc)
	releaseScript = redis.NewScript(releaseSrc)
)

func isNoScript(err error) bool { return redis.HasErrorPrefix(err, "NOSCRIPT") }

// scriptCall is one script invocation inside a pipeline.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// runPipelined sends calls in one pipeline (Cluster splits it per node; a
// single call goes without one) and returns one command per call. Calls
// answered NOSCRIPT did not run, so they are sent again with the script
// body. (go-redis itself may re-send a pipeline after a timeout, within
// MaxRetries; every script here is idempotent for its owner token, and a
// renewal's validity counts from before the first send.)
func runPipelined(ctx context.Context, c redis.UniversalClient, calls []scriptCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 1 {
		call := calls[0]
		cmds[0] = call.script.EvalSha(ctx, c, call.keys, call.args...)
		if isNoScript(cmds[0].Err()) {
			cmds[0] = call.script.Eval(ctx, c, call.keys, call.args...)
		}
		return cmds
	}
	pipe := c.Pipeline()
	for i, call := range calls {
		cmds[i] = call.script.EvalSha(ctx, pipe, call.keys, call.args...)
	}
	_, _ = pipe.Exec(ctx) // per-command errors are read below
	var again []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return cmds
	}
	pipe = c.Pipeline()
	for _, i := range again {
		cmds[i] = calls[i].script.Eval(ctx, pipe, calls[i].keys, calls[i].args...)
	}
	_, _ = pipe.Exec(ctx)
	return cmds
}
