package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-seed", "42", "-duration", "2m", "-faults", "failover,proxy-reset", "-unfenced"}, io.Discard)
	require.NoError(t, err)
	assert.EqualValues(t, 42, cfg.seed)
	assert.Equal(t, 2*time.Minute, cfg.duration)
	assert.Equal(t, []faultKind{faultFailover, faultReset}, cfg.faults)
	assert.True(t, cfg.unfenced)
	assert.Equal(t, 100*time.Millisecond, cfg.cancelWindow())
	assert.Equal(t, 1500*time.Millisecond, cfg.maxWork())
	assert.Equal(t, 2, cfg.runs, "two lockwatch run holders by default")
	assert.True(t, cfg.sharedLeases(), "shared lease holders by default")

	cfg, err = parseFlags([]string{"-shared-readers", "0", "-shared-writers", "0"}, io.Discard)
	require.NoError(t, err)
	assert.False(t, cfg.sharedLeases())

	cfg, err = parseFlags([]string{"-seed", "0"}, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, cfg.seed, "seed 0 can be replayed too")
	a, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.NotZero(t, a.seed, "without -seed, one from the clock")
	for _, topo := range topologies {
		assert.Subset(t, topo.faults(), []faultKind{faultRunStop, faultRunJobStop, faultRunProgramStop, faultRunLeaveChild, faultRunIgnoreTerm},
			"%s: the run holders' faults on every topology", topo)
	}

	cfg, err = parseFlags([]string{"-topology", "sentinel"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, topoSentinel, cfg.topology)
	assert.Equal(t, topoSentinel.faults(), cfg.faults, "every fault of the topology by default")
	assert.Contains(t, cfg.faults, faultPrimaryPartition)
	assert.NotContains(t, cfg.faults, faultFailover, "the sentinels fail over, not the harness")

	cfg, err = parseFlags([]string{"-topology", "cluster", "-faults", "slot-migrate,holder-stop"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []faultKind{faultSlotMigrate, faultHolderStop}, cfg.faults)

	cfg, err = parseFlags([]string{"-topology", "sentinel", "-clock-skew", "30s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, cfg.skew)

	for _, args := range [][]string{
		{"-clock-skew", "-1s"},
		{"-topology", "cluster", "-clock-skew", "1s"},
		{"-topology", "cluster", "-faults", "primary-kill"},
		{"-faults", "bogus"},
		{"-topology", "bogus"},
		{"-topology", "sentinel", "-faults", "failover"},
		{"-faults", "primary-kill"},
		{"-ttl", "10ms"},
		{"-goroutines", "1", "-procs", "0"},
		{"-procs", "0", "-faults", "holder-stop"},
		{"-runs", "0", "-faults", "run-leave-child"},
		{"-runs", "-1"},
		{"-shared-writers", "0"},
		{"-shared-readers", "-1", "-shared-writers", "0"},
		{"-shared-limit", "0"},
		{"extra"},
	} {
		_, err := parseFlags(args, io.Discard)
		assert.Error(t, err, "%q", args)
	}
}
