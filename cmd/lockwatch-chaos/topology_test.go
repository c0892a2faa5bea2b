package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -clock-skew puts the servers a failover promotes behind, and only them.
func TestClockSkewMovesTheReplicasOnly(t *testing.T) {
	redistest.Require(t)
	ctx := context.Background()
	for _, topo := range []topology{topoSingle, topoSentinel} {
		cfg := defaultConfig()
		cfg.topology, cfg.skew = topo, 30*time.Second
		d, err := startDeployment(cfg, t.TempDir(), []string{"k1"})
		require.NoError(t, err)
		var primary, replicas []*redistest.Server
		switch r := d.(type) {
		case *lockRedis:
			primary, replicas = []*redistest.Server{r.primary}, []*redistest.Server{r.replica}
		case *sentinelRedis:
			primary = []*redistest.Server{r.nodes[0].server}
			for _, n := range r.nodes[1:] {
				replicas = append(replicas, n.server)
			}
		}
		for _, s := range append(primary, replicas...) {
			reply, err := s.Do(ctx, "TIME")
			require.NoError(t, err)
			secs, err := strconv.ParseInt(reply.([]any)[0].(string), 10, 64)
			require.NoError(t, err)
			behind := time.Since(time.Unix(secs, 0))
			want := time.Duration(0)
			if s != primary[0] {
				want = 30 * time.Second
			}
			assert.InDelta(t, want, behind, float64(2*time.Second), "%s: %s", topo, describeServer(s))
		}
		require.NoError(t, d.close())
	}
}
