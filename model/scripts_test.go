package model

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
)

// scripts are the real scripts the replay runs, read from the files that
// lease and fence embed and put together as their scripts.go do.
type scripts struct {
	acquire, renew, release, force, inspect, write *redis.Script
	refresh                                        *redis.Script // FIFO's; no Locker sends it yet
}

func loadScripts(t *testing.T) scripts {
	t.Helper()
	read := func(path ...string) string {
		var src string
		for _, p := range path {
			b, err := os.ReadFile(filepath.Join("..", p))
			require.NoError(t, err)
			src += string(b)
		}
		return src
	}
	record := "lease/scripts/record.lua"
	return scripts{
		acquire: redis.NewScript(read(record, "lease/scripts/acquire.lua")),
		renew:   redis.NewScript(read(record, "lease/scripts/renew.lua")),
		release: redis.NewScript(read(record, "lease/scripts/release.lua")),
		force:   redis.NewScript(read(record, "lease/scripts/force.lua")),
		inspect: redis.NewScript(read(record, "lease/scripts/inspect.lua")),
		refresh: redis.NewScript(read(record, "lease/scripts/refresh.lua")),
		write:   redis.NewScript(read("fence/scripts/tokens.lua", "fence/scripts/write.lua")),
	}
}

// TestTheReplayRunsTheScriptsLockwatchRuns holds loadScripts to the code:
// a Locker and a fenced store, used through their API on a client that
// notes the scripts it sends, must send exactly these scripts (by SHA-1),
// so that the replay cannot pass on a script lockwatch no longer runs.
func TestTheReplayRunsTheScriptsLockwatchRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := redistest.Start(t)
	seen := &sentScripts{sha: map[string]bool{}}
	client := srv.Client(t)
	client.AddHook(seen)

	lk := lease.NewLocker(client, lease.Config{TTL: 300 * time.Millisecond})
	defer lk.Close()
	l, err := lk.Acquire(ctx, "k")
	require.NoError(t, err)
	s := loadScripts(t)
	require.Eventually(t, func() bool { return seen.has(s.renew.Hash()) }, 10*time.Second, 10*time.Millisecond,
		"no renewal sent the replay's renew script")
	info, err := lk.Inspect(ctx, "k")
	require.NoError(t, err)
	_, err = lk.ForceRelease(ctx, "k", info.Holder)
	require.NoError(t, err)
	_ = l.Release(ctx) // not held any more: forced
	require.NoError(t, fence.NewRedisStore(client, "model", fence.RedisConfig{}).Write(ctx, "k", fence.Mint("lockwatch", "k", 1, nil), []byte("v")))

	for name, sc := range map[string]*redis.Script{
		"acquire": s.acquire, "renew": s.renew, "release": s.release,
		"force": s.force, "inspect": s.inspect, "write": s.write,
	} {
		require.True(t, seen.has(sc.Hash()), "lockwatch did not send the replay's %s script (SHA-1 %s): the replay would test a script it does not run; sent: %v",
			name, sc.Hash(), seen.list())
	}
}

// sentScripts is a go-redis hook that notes the SHA-1 of every script sent.
type sentScripts struct {
	mu  sync.Mutex
	sha map[string]bool
}

func (h *sentScripts) note(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cmd := range cmds {
		args := cmd.Args()
		if len(args) < 2 {
			continue
		}
		switch arg, _ := args[1].(string); cmd.Name() {
		case "evalsha":
			h.sha[arg] = true
		case "eval":
			sum := sha1.Sum([]byte(arg))
			h.sha[hex.EncodeToString(sum[:])] = true
		}
	}
}

func (h *sentScripts) has(sha string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sha[sha]
}

func (h *sentScripts) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for s := range h.sha {
		out = append(out, s)
	}
	return out
}

func (h *sentScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sentScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(cmd)
		return next(ctx, cmd)
	}
}

func (h *sentScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.note(cmds...)
		return next(ctx, cmds)
	}
}
