package fence

import (
	"context"
	_ "embed"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// One Lua script per operation, each behind tokens.lua (the token
// comparison), run by redis.Script.Run: EVALSHA, and EVAL with the body
// when the server answers NOSCRIPT (after a restart or a failover the
// script cache is empty). One type per script builds its call, its fields
// named as the script's header names its KEYS and ARGV. The record's key is
// KEYS[1], so Cluster routes the call to its shard.
var (
	//go:embed scripts/tokens.lua
	tokensSrc string
	//go:embed scripts/write.lua
	writeSrc string
	//go:embed scripts/admit.lua
	admitSrc string
	//go:embed scripts/repair.lua
	repairSrc string

	writeScript  = redis.NewScript(tokensSrc + writeSrc)
	admitScript  = redis.NewScript(tokensSrc + admitSrc)
	repairScript = redis.NewScript(tokensSrc + repairSrc)
)

// fenceOp is write.lua's or admit.lua's call, less what RedisStore.run
// decides for every token: the record, the token's fence and the clock
// bound (checked).
type fenceOp interface {
	name() string // what the call's errors call it
	send(ctx context.Context, c redis.Scripter, chk checked) *redis.Cmd
}

// checked is a token the policy let through, for a key's record.
type checked struct {
	record string
	fence  int64
	skew   string // policy.skewArg
}

// writeArgs is one Write (write.lua).
type writeArgs struct {
	value []byte
	id    string // the Write call's own (newWriteID)
}

func (writeArgs) name() string { return "write" }

func (a writeArgs) send(ctx context.Context, c redis.Scripter, chk checked) *redis.Cmd {
	return writeScript.Run(ctx, c, []string{chk.record}, decimal(chk.fence), a.value, a.id, chk.skew)
}

// admitArgs is one Admit (admit.lua).
type admitArgs struct{}

func (admitArgs) name() string { return "admit" }

func (admitArgs) send(ctx context.Context, c redis.Scripter, chk checked) *redis.Cmd {
	return admitScript.Run(ctx, c, []string{chk.record}, decimal(chk.fence), chk.skew)
}

// repairArgs is one Repair (repair.lua).
type repairArgs struct {
	record      string
	seen, floor int64
	skew        int64 // the store's MaxSkew, in microseconds
}

func (a repairArgs) send(ctx context.Context, c redis.Scripter) *redis.Cmd {
	return repairScript.Run(ctx, c, []string{a.record}, decimal(a.seen), decimal(a.floor), decimal(a.skew))
}

func decimal(n int64) string { return strconv.FormatInt(n, 10) }
