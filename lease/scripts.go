package lease

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"slices"

	"github.com/redis/go-redis/v9"
)

// One Lua script per operation, each run by EVALSHA with EVAL as the
// fallback when the server answers NOSCRIPT (after a restart or a failover
// the script cache is empty). KEYS are passed as KEYS so Cluster routes them.
// The scripts that read or write the fence record start with record.lua,
// so the record's format is parsed and written in one place.
var (
	//go:embed scripts/record.lua
	recordSrc string
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/renew.lua
	renewSrc string
	//go:embed scripts/release.lua
	releaseSrc string

	acquireScript = newScript(recordSrc + acquireSrc)
	renewScript   = newScript(renewSrc)
	releaseScript = newScript(recordSrc + releaseSrc)
)

// script is one Lua script. A call is its complete EVALSHA argument list,
// built once: a lease builds its renewal and release calls when it is
// acquired and sends the same lists every time, so the hot paths box no
// argument and copy no slice.
type script struct {
	src string
	sha any // the SHA1 in hex, boxed once
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	h := hex.EncodeToString(sum[:])
	return &script{src: src, sha: h}
}

// call returns the EVALSHA argument list running s on keys (the first
// numKeys of keysAndArgs) and args.
func (s *script) call(numKeys int, keysAndArgs ...any) scriptCall {
	args := make([]any, 0, 3+len(keysAndArgs))
	args = append(args, "evalsha", s.sha, numKeys)
	return scriptCall{script: s, args: append(args, keysAndArgs...)}
}

// scriptCall is one script invocation: EVALSHA, sha, numkeys, keys, args.
type scriptCall struct {
	script *script
	args   []any
}

// with returns the same KEYS and ARGV as a call of s, in a list of its own.
func (sc scriptCall) with(s *script) scriptCall {
	args := slices.Clone(sc.args)
	args[1] = s.sha
	return scriptCall{script: s, args: args}
}

// send queues (on a pipeline) or sends (on a client) the call; a NOSCRIPT
// reply is answered by send with eval set, which sends the script's body.
func (sc scriptCall) send(ctx context.Context, c processor, eval bool) *redis.Cmd {
	args := sc.args
	if eval {
		args = slices.Clone(args)
		args[0], args[1] = "eval", sc.script.src
	}
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	_ = c.Process(ctx, cmd)
	return cmd
}

// processor is what a call is sent on: a client or a pipeline.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

// runOne sends one call on its own (no pipeline) and returns its command.
func runOne(ctx context.Context, c redis.UniversalClient, call scriptCall) *redis.Cmd {
	cmd := call.send(ctx, c, false)
	if isNoScript(cmd.Err()) {
		cmd = call.send(ctx, c, true)
	}
	return cmd
}

// runPipelined sends calls in one pipeline (Cluster splits it per node) and
// returns one command per call. Calls answered NOSCRIPT did not run, so they
// are sent again with the script body. (go-redis itself may re-send a
// pipeline after a timeout, within MaxRetries; every script here is
// idempotent for its owner token, and a renewal's validity counts from
// before the first send.)
func runPipelined(ctx context.Context, c redis.UniversalClient, calls []scriptCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 1 {
		cmds[0] = runOne(ctx, c, calls[0])
		return cmds
	}
	pipe := c.Pipeline()
	for i, call := range calls {
		cmds[i] = call.send(ctx, pipe, false)
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
		cmds[i] = calls[i].send(ctx, pipe, true)
	}
	_, _ = pipe.Exec(ctx)
	return cmds
}
