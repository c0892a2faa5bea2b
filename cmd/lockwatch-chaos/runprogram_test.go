package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runProgram runs the program as lockwatch run would, with fence 42 on
// key k, sends it SIGTERM at its first heartbeat, and returns its
// heartbeats once every process holding its stdout has exited.
func runProgram(t *testing.T, spec programSpec) *heartbeats {
	exe, err := os.Executable()
	require.NoError(t, err)
	env, err := json.Marshal(spec)
	require.NoError(t, err)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), programEnv+"="+string(env), envFence+"=42", envKey+"=k", noExitSleep())
	cmd.Stdout = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	w.Close()
	hb := newHeartbeats()
	hb.read(r, func(b beat) {
		assert.True(t, isProgramProcess(b.Pid), "a running program is seen as one (the outlived check)")
		_ = cmd.Process.Signal(syscall.SIGTERM)
	})
	require.NoError(t, cmd.Wait(), "the program exits 0 however it ends")
	assert.False(t, isProgramProcess(cmd.Process.Pid), "nor one that has exited")
	return hb
}

func TestProgram(t *testing.T) {
	spec := programSpec{Holder: "r1", Seq: 1, Work: 200 * time.Millisecond, Beat: 5 * time.Millisecond, Role: roleProgram}

	work := runProgram(t, spec).work()
	require.Len(t, work, 1)
	assert.EqualValues(t, 42, work[0].Fence, "it heartbeats with the fence lockwatch run gave it")
	assert.Equal(t, "k", work[0].Key)
	assert.Less(t, work[0].Done-work[0].Acquired, int64(100*time.Millisecond), "SIGTERM ends it")

	spec.IgnoreTerm = true
	work = runProgram(t, spec).work()
	require.Len(t, work, 1)
	assert.GreaterOrEqual(t, work[0].Done-work[0].Acquired, int64(150*time.Millisecond), "it ignores SIGTERM and works on")

	for _, leave := range []string{leaveGroup, leaveSetsid} {
		spec.Leave, spec.ChildLife = leave, 200*time.Millisecond
		hb := runProgram(t, spec)
		var program, child *span
		for id, s := range hb.spans {
			switch {
			case s.role == roleProgram:
				program = s
			case id.fence == 42:
				child = s
			}
		}
		require.NotNil(t, program, leave)
		require.NotNil(t, child, "%s: the program left a process heartbeating", leave)
		assert.GreaterOrEqual(t, child.last-program.last, int64(150*time.Millisecond), "%s: it heartbeats on after the program's work", leave)
		want := roleChild
		if leave == leaveSetsid && !setsidSupervised {
			want = roleUnsupervised
		}
		assert.Equal(t, want, child.role, leave)
	}
}
