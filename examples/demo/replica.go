package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"

	"github.com/lockwatch/lockwatch/examples/internal/reportspb"
)

// replica is one instance of the demo's service, as it would run in its own
// process: its own lease client (with its own faults), its own Locker, an
// HTTP API and a gRPC service. Replicas share only Redis and the ledger, as
// real ones would.
type replica struct {
	name   string
	d      *demo
	client *redis.Client
	faults *redisFaults
	gate   gate // closed while the replica is paused
	locker *lease.Locker
	job    job

	httpSrv *http.Server
	httpURL string
	grpcSrv *grpc.Server
	grpcAdr string

	stopOnce sync.Once
	stopErr  error

	pauseArmed atomic.Bool
	victims    chan victim // the write a pause caught, to the chaos loop
}

// victim is the deposit whose final write a pause interrupted.
type victim struct {
	replica *replica
	account string
	fence   int64
	resume  func()
}

func newReplica(d *demo, name string) (*replica, error) {
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	grpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(err, httpLn.Close())
	}
	r := &replica{name: name, d: d, victims: make(chan victim, 1),
		httpURL: "http://" + httpLn.Addr().String(), grpcAdr: grpcLn.Addr().String()}
	r.job.r = r
	r.faults = &redisFaults{frozen: &r.gate}
	if d.cfg.faults.on(faultRedisLoss) {
		r.faults.lossRate, r.faults.onLoss = lossRate, func() { d.narrateLoss(name) }
	}
	r.client = d.redis.client(r.faults)
	ttl := d.cfg.ttl
	r.locker = lease.NewLocker(r.client, lease.Config{
		TTL:            ttl,
		Namespace:      namespace,
		CommitHard:     d.commitHard(),
		CommitWarn:     d.commitWarn(),
		CommitTimeout:  d.commitTimeout(),
		ReleaseTimeout: ttl / 2,
		FenceRetention: max(ttl, 10*time.Minute),
		Telemetry:      d.tel,
	})
	if err := r.job.open(d); err != nil {
		return nil, errors.Join(err, r.locker.Close(), r.client.Close(), httpLn.Close(), grpcLn.Close())
	}
	r.job.faults.onLoss = r.faults.onLoss

	// HTTP API: one route, wrapped in the holder middleware. The lock name
	// in metrics is the route pattern, never the account.
	lockAccount := middleware.HTTP(r.locker, func(req *http.Request) string {
		return "account:" + req.PathValue("id")
	}, middleware.Config{})
	// Exports: at most exportPermits at once across the replicas, each
	// holding one permit of the "exports" semaphore while it runs.
	bounded := middleware.HTTP(r.locker, func(*http.Request) string { return "exports" },
		middleware.Config{Permits: exportPermits, Lease: lease.Config{Wait: d.ttls(exportWaitTTLs)}})
	mux := http.NewServeMux()
	mux.Handle("POST /accounts/{id}/deposit", d.traced(lockAccount(http.HandlerFunc(r.deposit))))
	mux.Handle("POST /exports", d.traced(bounded(http.HandlerFunc(r.export))))
	r.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	d.serve(func() error { return ignoreClosed(r.httpSrv.Serve(httpLn)) })

	// gRPC: the same Locker behind both interceptors, otelgrpc's stats
	// handler beside them for the server spans. Reports may hold their
	// lease for maxHold at most. A report asked for while another
	// replica writes the same account waits for it up to reportWaitTTLs
	// (first come, first served); reports run longer, so most such waits
	// time out, and the wait saturation signal has data.
	reportKey := func(account string) string {
		if account == "" {
			return "" // no lock: the handler answers the bad request
		}
		return "report:" + account
	}
	r.grpcSrv = grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(d.providers.TracerProvider),
			otelgrpc.WithMeterProvider(d.providers.MeterProvider))),
		grpc.ChainUnaryInterceptor(middleware.UnaryServerInterceptor(r.locker, func(_ context.Context, _ string, req any) string { return reportKey(accountOf(req)) }, middleware.Config{Lease: lease.Config{MaxHold: d.maxHold(), Wait: d.ttls(reportWaitTTLs)}})),
		grpc.ChainStreamInterceptor(middleware.StreamServerInterceptor(r.locker, func(ctx context.Context, _ string) string { return reportKey(accountFromMetadata(ctx)) }, middleware.Config{Lease: lease.Config{MaxHold: d.maxHold()}})),
	)
	reportspb.RegisterReportsServer(r.grpcSrv, &reports{r: r})
	d.serve(func() error { return ignoreClosed(r.grpcSrv.Serve(grpcLn)) })
	return r, nil
}

// shutdown stops the servers (waiting for handlers in flight, at most
// grace), then the Lockers, then the lease clients.
func (r *replica) shutdown(grace time.Duration) error {
	r.stopOnce.Do(func() { r.stopErr = r.stopServers(grace) })
	return r.stopErr
}

func (r *replica) stopServers(grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	errHTTP := r.httpSrv.Shutdown(ctx)
	stopped := make(chan struct{})
	go func() {
		r.grpcSrv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		r.grpcSrv.Stop()
		<-stopped
	}
	if errHTTP != nil {
		errHTTP = fmt.Errorf("%s: stop its HTTP server: %w", r.name, errHTTP)
	}
	errLocker := r.locker.Close()
	if errLocker != nil {
		errLocker = fmt.Errorf("%s: close its Locker: %w", r.name, errLocker)
	}
	return errors.Join(errHTTP, errLocker, r.client.Close(), r.job.close())
}

// work simulates d of the handler's work on ctx, the lease's context. A
// well-behaved handler stops as soon as the lease is lost; with the
// slow-cancel fault it first spends a while cleaning up, ignoring the
// cancellation (the cancellation latency lockwatch measures). While the
// replica is paused, work does not advance, as in a paused process.
func (r *replica) work(ctx context.Context, d time.Duration, slowCancel bool) error {
	if r.advance(ctx.Done(), d) {
		return nil
	}
	cause := context.Cause(ctx)
	if slowCancel {
		took := jitter(r.d.cfg.ttl/10, r.d.cfg.ttl/2)
		if errors.Is(cause, lease.ErrLost) {
			r.d.often("slowstop", "%s: work whose lease was lost takes %v to stop: watch the cancellation latency (lockwatch_lease_cancellation_latency_seconds)",
				r.name, took.Round(time.Millisecond))
		}
		r.sleep(took)
	}
	return cause
}

// sleep waits d regardless of any lease, but not past the demo's shutdown
// or while the replica is paused.
func (r *replica) sleep(d time.Duration) { r.advance(r.d.stop, d) }

// advance lets d pass on the replica's clock, which stands still while the
// replica is paused. It reports false when done closes first.
func (r *replica) advance(done <-chan struct{}, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		r.gate.wait(r.d.stop)
		left := time.Until(deadline)
		if left <= 0 {
			return true
		}
		t := time.NewTimer(min(left, r.d.cfg.ttl/20))
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return false
		}
	}
}

// slowCancel decides whether a handler is one of the slow-to-cancel ones.
func (r *replica) slowCancel() bool {
	return r.d.cfg.faults.on(faultSlowCancel) && rand.Float64() < slowCancelShare
}

// maybePause is where the pause fault strikes: inside a deposit's final
// write, after Commit checked the lease and before the write reaches the
// ledger, the gap that no client-side check can close. When the chaos loop
// has armed a pause, the first write to get here pauses the whole replica.
func (r *replica) maybePause(account string, fence int64) (paused bool) {
	return r.pauseHere(&r.pauseArmed, r.victims, account, fence)
}

// pauseHere pauses the whole replica if armed is set, and hands the write
// it caught (to account, with fence) to the chaos loop on victims; it
// returns once the replica resumes, and reports whether it paused.
func (r *replica) pauseHere(armed *atomic.Bool, victims chan<- victim, account string, fence int64) bool {
	if !armed.CompareAndSwap(true, false) {
		return false
	}
	victims <- victim{replica: r, account: account, fence: fence, resume: r.gate.pause()}
	r.gate.wait(r.d.stop)
	return true
}

func jitter(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo)
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

func (r *replica) String() string { return fmt.Sprintf("%s (%s)", r.name, r.httpURL) }

// exportPermits is how many exports the replicas run at once.
const exportPermits = 2

// export stands for heavy work of which the replicas may run
// exportPermits at once: it works for a while, and stops when its
// permit's context ends (a loss: the middleware answers for it).
func (r *replica) export(w http.ResponseWriter, req *http.Request) {
	t := time.NewTimer(jitter(r.d.ttls(0.3), r.d.ttls(0.9)))
	defer t.Stop()
	select {
	case <-t.C:
		w.WriteHeader(http.StatusNoContent)
	case <-req.Context().Done():
	}
}
