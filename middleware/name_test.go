package middleware

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

// TestConfigNameNamesTheLock: one Config.Name names the lock of HTTP requests
// and gRPC calls alike, in the refusal and in the metrics, instead of the
// route or method.
func TestConfigNameNamesTheLock(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{TTL: 5 * time.Second})
	holder, err := lk.Acquire(ctx, "42")
	require.NoError(t, err)
	defer holder.Release(ctx)

	url, c := routeServer(t, lk, func(http.ResponseWriter, *http.Request) {}, Config{Name: "reports"})
	resp := post(t, c, url+"/reports/42")
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Equal(t, "reports", decodeProblem(t, resp).LockName)

	client := lockedServer(t, lk, &health{check: func(context.Context) error { return nil }}, Config{Name: "reports"})
	_, err = client.Check(withLockKey(ctx, "42"), &grpc_health_v1.HealthCheckRequest{})
	_, info, _ := details(t, err)
	assert.Equal(t, "reports", info.GetMetadata()["lock_name"])

	assert.EqualValues(t, 2, h.Sum(t, obs.LeaseAcquires, telemetrytest.Attrs(obs.AttrLockName, "reports", obs.AttrResult, "contended")))
}

// TestALeaseNameIsReplacedByTheMiddlewares: a Name given through
// Config.Lease does not name the lock; the route does (as Config.Lease
// says).
func TestALeaseNameIsReplacedByTheMiddlewares(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	lk := newLocker(t, srv.Client(t), h.Tel, lease.Config{TTL: 5 * time.Second})
	holder, err := lk.Acquire(ctx, "42")
	require.NoError(t, err)
	defer holder.Release(ctx)
	url, c := routeServer(t, lk, func(http.ResponseWriter, *http.Request) {}, Config{Lease: lease.Config{Name: "ignored"}})
	resp := post(t, c, url+"/reports/42")
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Equal(t, "POST /reports/{id}", decodeProblem(t, resp).LockName)
	assert.EqualValues(t, 1, h.Sum(t, obs.LeaseAcquires, telemetrytest.Attrs(obs.AttrLockName, "POST /reports/{id}", obs.AttrResult, "contended")),
		"the lease, too, is named by the route")
}
