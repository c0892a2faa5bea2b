// Package script runs Redis Lua scripts: by EVALSHA with the script's body
// as the fallback, alone or in pipelines.
package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script, run by EVALSHA with EVAL as the fallback when
// the server answers NOSCRIPT (after a restart or a failover the script
// cache is empty). KEYS are passed as KEYS so Cluster routes them.
//
// A call is its complete EVALSHA argument list, built once: a lease builds
// its renewal and release calls when it is acquired and sends the same lists
// every time, so the hot paths box no argument and copy no slice.
type Script struct {
	src string
	sha any // the SHA1 in hex, boxed once
}

// New returns the script whose body is src.
func New(src string) *Script {
	sum := sha1.Sum([]byte(src))
	h := hex.EncodeToString(sum[:])
	return &Script{src: src, sha: h}
}

// Source returns the script's body.
func (s *Script) Source() string { return s.src }

// Runs reports whether cmd runs s (by EVALSHA or EVAL).
func (s *Script) Runs(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	switch cmd.Name() {
	case "evalsha":
		return args[1] == s.sha
	case "eval":
		return args[1] == s.src
	}
	return false
}

// Call returns the EVALSHA argument list running s on keys (the first
// numKeys of keysAndArgs) and args.
func (s *Script) Call(numKeys int, keysAndArgs ...any) Call {
	args := make([]any, 0, 3+len(keysAndArgs))
	args = append(args, "evalsha", s.sha, numKeys)
	return Call{script: s, args: append(args, keysAndArgs...)}
}

// Call is one script invocation: EVALSHA, sha, numkeys, keys, args.
type Call struct {
	script *Script
	args   []any
}

// send queues (on a pipeline) or sends (on a client) the call; a NOSCRIPT
// reply is answered by send with eval set, which sends the script's body.
func (c Call) send(ctx context.Context, p processor, eval bool) *redis.Cmd {
	args := c.args
	if eval {
		args = slices.Clone(args)
		args[0], args[1] = "eval", c.script.src
	}
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	_ = p.Process(ctx, cmd)
	return cmd
}

// processor is what a call is sent on: a client or a pipeline.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

// RunOne sends one call on its own (no pipeline) and returns its command.
func RunOne(ctx context.Context, c redis.UniversalClient, call Call) *redis.Cmd {
	cmd := call.send(ctx, c, false)
	if isNoScript(cmd.Err()) {
		cmd = call.send(ctx, c, true)
	}
	FollowFailover(c, cmd)
	return cmd
}

// FollowFailover makes a Cluster client reload its slot map when a command
// got no reply from its node (a refused dial, a reset, a timeout: not an
// error reply). go-redis reloads on MOVED and ASK, which a dead master
// never sends, and otherwise only every ClusterStateReloadInterval (60 s by
// default in go-redis v9.23): until then every command for the dead
// master's slots goes to the dead master, also after its replica took them
// over. The reload is go-redis's own, asynchronous and coalesced (one at a
// time, at most one every 200 ms), so calling it on every failed round trip
// costs nothing more. Other clients are left alone: a Sentinel client
// follows the sentinels itself.
func FollowFailover(c any, cmds ...*redis.Cmd) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return
	}
	for _, cmd := range cmds {
		var reply redis.Error
		if err := cmd.Err(); err != nil && err != redis.Nil && !errors.As(err, &reply) {
			cc.ReloadState(context.Background())
			return
		}
	}
}

// RunPipelined sends calls in one pipeline (Cluster splits it per node) and
// returns one command per call. Calls answered NOSCRIPT did not run, so they
// are sent again with the script body. (go-redis itself may re-send a
// pipeline after a timeout, within MaxRetries; every lease script is
// idempotent for its owner token, and a renewal's validity counts from
// before the first send.)
func RunPipelined(ctx context.Context, c redis.UniversalClient, calls []Call) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 1 {
		cmds[0] = RunOne(ctx, c, calls[0])
		return cmds
	}
	pipe := c.Pipeline()
	for i, call := range calls {
		cmds[i] = call.send(ctx, pipe, false)
	}
	_, _ = pipe.Exec(ctx) // per-command errors are read below
	FollowFailover(c, cmds...)
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

// RunWith sends call in a pipeline of its own on node, followed by the
// commands that then queues on it (a WAIT, say), and returns the call's
// command and what then returned. A call answered NOSCRIPT did not run, so
// the whole pipeline is sent again with the script body: the commands after
// the call are about its effects.
func RunWith[T any](ctx context.Context, node interface{ Pipeline() redis.Pipeliner }, call Call, then func(redis.Pipeliner) T) (*redis.Cmd, T) {
	run := func(eval bool) (*redis.Cmd, T) {
		pipe := node.Pipeline()
		cmd := call.send(ctx, pipe, eval)
		after := then(pipe)
		_, _ = pipe.Exec(ctx)
		return cmd, after
	}
	cmd, after := run(false)
	if isNoScript(cmd.Err()) {
		cmd, after = run(true)
	}
	return cmd, after
}
