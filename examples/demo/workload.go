package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/middleware"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockwatch/lockwatch/examples/internal/reportspb"
)

// outcome is how a workload request ended, as its client saw it.
type outcome int

const (
	outOK          outcome = iota
	outContended           // 409 / ABORTED LEASE_CONTENDED: another request held the key
	outUnknown             // 503 / UNAVAILABLE LEASE_UNKNOWN: Redis did not answer in time
	outLost                // 503 / UNAVAILABLE LEASE_LOST: the lease was lost while the work ran
	outStale               // 409 FENCE_STALE / ABORTED: the ledger rejected the final write
	outExpiring            // 503 / UNAVAILABLE LEASE_EXPIRING: too little validity left to commit
	outUnavailable         // 503 / UNAVAILABLE LEASE_UNAVAILABLE: the acquire failed, nothing taken
	outFailed              // any other refusal or error
	outTimeout             // the client's deadline passed
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "contended", "unknown", "lost", "stale", "expiring", "unavailable", "failed", "timeout"}

// workload is the demo's clients: workers calling the replicas' HTTP API
// (deposits) and gRPC service (reports) concurrently on a few accounts.
type workload struct {
	d         *demo
	http      *http.Client
	transport *http.Transport // under http's otelhttp transport
	conns     []*grpc.ClientConn
	reports   []reportspb.ReportsClient

	requests atomic.Int64
	byKind   [3]atomic.Int64 // deposit, report, stream
	outcomes [numOutcomes]atomic.Int64
	wg       sync.WaitGroup
}

func newWorkload(d *demo) (*workload, error) {
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	w := &workload{d: d, transport: transport, http: &http.Client{Transport: d.tracedTransport(transport)}}
	for _, r := range d.replicas {
		conn, err := grpc.NewClient(r.grpcAdr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithStatsHandler(otelgrpc.NewClientHandler(
				otelgrpc.WithTracerProvider(d.providers.TracerProvider),
				otelgrpc.WithMeterProvider(d.providers.MeterProvider))))
		if err != nil {
			w.close()
			return nil, err
		}
		w.conns = append(w.conns, conn)
		w.reports = append(w.reports, reportspb.NewReportsClient(conn))
	}
	return w, nil
}

func (w *workload) start(ctx context.Context) {
	for range w.d.cfg.workers {
		w.wg.Go(func() { w.worker(ctx) })
	}
	for range 2 * exportPermits {
		w.wg.Go(func() { w.exporter(ctx) })
	}
}

// exporter asks a random replica for an export, again and again: twice
// as many exporters as permits keep the semaphore saturated, so that some
// waits for a permit time out. Exports are not counted among the
// requests: the summary is the accounts'.
func (w *workload) exporter(ctx context.Context) {
	for ctx.Err() == nil {
		i := rand.N(len(w.d.replicas))
		rctx, cancel := context.WithTimeout(ctx, w.d.cfg.ttl)
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.d.replicas[i].httpURL+"/exports", nil)
		if err == nil {
			if resp, err := w.http.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}
		cancel()
		t := time.NewTimer(jitter(w.d.cfg.ttl/20, w.d.cfg.ttl/5))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

func (w *workload) wait() { w.wg.Wait() }

func (w *workload) close() {
	for _, c := range w.conns {
		_ = c.Close()
	}
	w.transport.CloseIdleConnections()
}

func (w *workload) worker(ctx context.Context) {
	ttl := w.d.cfg.ttl
	for ctx.Err() == nil {
		i := rand.N(len(w.d.replicas))
		account := "acct-" + strconv.Itoa(rand.N(w.d.cfg.accounts)+1)
		var out outcome
		kind := 0 // deposit
		switch x := rand.Float64(); {
		case x < 0.7:
			out, _ = w.deposit(ctx, i, account)
		case x < 0.9:
			kind, out = 1, w.generate(ctx, i, account)
		default:
			kind, out = 2, w.stream(ctx, i, account)
		}
		if ctx.Err() != nil {
			return // the demo is stopping: not an outcome
		}
		w.requests.Add(1)
		w.byKind[kind].Add(1)
		w.outcomes[out].Add(1)
		t := time.NewTimer(jitter(ttl/100, ttl/30))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// deposit calls POST /accounts/{id}/deposit on replica i.
func (w *workload) deposit(ctx context.Context, i int, account string) (outcome, depositReply) {
	ctx, cancel := context.WithTimeout(ctx, w.d.cfg.ttl)
	defer cancel()
	url := fmt.Sprintf("%s/accounts/%s/deposit?amount=%d", w.d.replicas[i].httpURL, account, rand.N(100)+1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return outFailed, depositReply{}
	}
	resp, err := w.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return outTimeout, depositReply{}
		}
		return outFailed, depositReply{}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return outTimeout, depositReply{}
	}
	if resp.StatusCode == http.StatusOK {
		var reply depositReply
		_ = json.Unmarshal(body, &reply)
		return outOK, reply
	}
	var p middleware.Problem
	_ = json.Unmarshal(body, &p)
	return outcomeOf(p.Reason), depositReply{}
}

// generate calls Reports/Generate on replica i.
func (w *workload) generate(ctx context.Context, i int, account string) outcome {
	ctx, cancel := context.WithTimeout(ctx, 4*w.d.cfg.ttl)
	defer cancel()
	_, err := w.reports[i].Generate(ctx, wrapperspb.String(account))
	return grpcOutcome(err)
}

// stream calls Reports/Stream on replica i and reads every page. The
// account also goes in the metadata, for the stream interceptor's key.
func (w *workload) stream(ctx context.Context, i int, account string) outcome {
	ctx, cancel := context.WithTimeout(ctx, 4*w.d.cfg.ttl)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, accountMetadata, account)
	s, err := w.reports[i].Stream(ctx, wrapperspb.String(account))
	if err != nil {
		return grpcOutcome(err)
	}
	for {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return outOK
			}
			return grpcOutcome(err)
		}
	}
}

func grpcOutcome(err error) outcome {
	if err == nil {
		return outOK
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.DeadlineExceeded:
		return outTimeout
	case codes.Aborted:
		if reasonOf(st) == reasonContended {
			return outContended
		}
		return outStale
	}
	return outcomeOf(reasonOf(st))
}

func reasonOf(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

func outcomeOf(reason string) outcome {
	switch reason {
	case reasonContended:
		return outContended
	case reasonUnknown:
		return outUnknown
	case reasonUnavailable:
		return outUnavailable
	case reasonLost:
		return outLost
	case reasonFenceStale:
		return outStale
	case reasonExpiring:
		return outExpiring
	}
	return outFailed
}
