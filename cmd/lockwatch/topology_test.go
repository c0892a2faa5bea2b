package main

import (
	"strings"
	"testing"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// The same run, inspect and release --force, through the other two
// connection flags: the keys of one lease share a Cluster slot, and a
// Sentinel deployment is a single node found through its sentinels.

func TestCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	testForceRelease(t, []string{"--cluster", strings.Join(cluster.Addrs(), ",")})
}

func TestSentinel(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	ss := redistest.StartSentinels(t, primary, redistest.SentinelConfig{})
	testForceRelease(t, []string{"--sentinel", strings.Join(ss.Addrs(), ","), "--master", ss.Name()})
}
