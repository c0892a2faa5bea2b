package script

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	echo = New("return ARGV[1]")
	incr = New("return redis.call('INCR', KEYS[1])")
)

// sent records the name of every script call and GET a client sends, alone
// or in a pipeline (not the handshakes of its new connections).
type sent struct {
	mu    sync.Mutex
	names []string
}

func (s *sent) add(cmds ...redis.Cmder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cmd := range cmds {
		if name := cmd.Name(); slices.Contains([]string{"evalsha", "eval", "get"}, name) {
			s.names = append(s.names, name)
		}
	}
}

func (s *sent) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := s.names
	s.names = nil
	return names
}

func (s *sent) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *sent) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.add(cmd)
		return next(ctx, cmd)
	}
}
func (s *sent) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		s.add(cmds...)
		return next(ctx, cmds)
	}
}

// After a restart or a failover the script cache is empty: a call answered
// NOSCRIPT did not run, and is sent again with the script's body, alone, in
// a pipeline (only the calls that did not run) and with the commands that
// follow it (all of them: they are about its effects).
func TestNoScriptSendsTheBody(t *testing.T) {
	ctx := t.Context()
	c := redistest.Start(t).Client(t)
	log := &sent{}
	c.AddHook(log)
	flush := func() {
		require.NoError(t, c.ScriptFlush(ctx).Err())
		log.take()
	}

	flush()
	got, err := RunOne(ctx, c, echo.Call(0, "a")).Text()
	require.NoError(t, err)
	assert.Equal(t, "a", got)
	assert.Equal(t, []string{"evalsha", "eval"}, log.take())
	got, err = RunOne(ctx, c, echo.Call(0, "b")).Text()
	require.NoError(t, err)
	assert.Equal(t, "b", got)
	assert.Equal(t, []string{"evalsha"}, log.take(), "cached by the EVAL")

	flush()
	require.NoError(t, c.ScriptLoad(ctx, echo.Source()).Err())
	log.take()
	cmds := RunPipelined(ctx, c, []Call{echo.Call(0, "x"), incr.Call(1, "n")})
	require.Len(t, cmds, 2)
	assert.Equal(t, "x", cmds[0].Val())
	assert.EqualValues(t, 1, cmds[1].Val(), "the call answered NOSCRIPT ran once")
	assert.Equal(t, []string{"evalsha", "evalsha", "eval"}, log.take())

	flush()
	cmd, get := RunWith(ctx, c, incr.Call(1, "n"), func(pipe redis.Pipeliner) *redis.StringCmd {
		return pipe.Get(ctx, "n")
	})
	assert.EqualValues(t, 2, cmd.Val())
	assert.Equal(t, "2", get.Val(), "the command after the call sees its effect")
	assert.Equal(t, []string{"evalsha", "get", "eval", "get"}, log.take())
}

func TestRunsTellsTheScript(t *testing.T) {
	call := echo.Call(1, "k", "v")
	assert.Equal(t, []any{"evalsha", echo.sha, 1, "k", "v"}, call.args)
	assert.True(t, echo.Runs(redis.NewCmd(t.Context(), call.args...)))
	assert.False(t, incr.Runs(redis.NewCmd(t.Context(), call.args...)))
	assert.True(t, echo.Runs(redis.NewCmd(t.Context(), "eval", echo.Source(), 0)))
}
