package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
)

// The refusal reasons the demo matches: lockwatch's wire values (the table
// of the middleware package doc).
const (
	reasonContended   = "LEASE_CONTENDED"
	reasonUnknown     = "LEASE_UNKNOWN"
	reasonUnavailable = "LEASE_UNAVAILABLE"
	reasonLost        = "LEASE_LOST"
	reasonFenceStale  = "FENCE_STALE"
	reasonExpiring    = "LEASE_EXPIRING"
)

// depositReply is the answer to a deposit.
type depositReply struct {
	Account string `json:"account"`
	Balance int64  `json:"balance"`
	Fence   int64  `json:"fence"`
}

// deposit is POST /accounts/{id}/deposit?amount=N, run by the holder
// middleware under the lease on account:{id}: read the balance from the
// ledger, work a little, and write the new balance back with the lease's
// fencing token. A read-modify-write like this one is what a holder that
// lost its lease would corrupt: the ledger's fence is what stops it.
func (r *replica) deposit(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context() // the lease's context
	l := lease.FromContext(ctx)
	account := req.PathValue("id")
	key := "account:" + account
	amount, err := strconv.ParseInt(req.URL.Query().Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		amount = rand.Int64N(100) + 1
	}
	slow := r.slowCancel()

	balance, err := r.d.ledger.get(ctx, key)
	if err != nil {
		r.failed(w, ctx, err, slow)
		return
	}
	if err := r.work(ctx, jitter(r.d.cfg.ttl/60, r.d.cfg.ttl/20), slow); err != nil {
		return // lease lost: the middleware answers 503 LEASE_LOST
	}

	// The final write: Commit checks that the lease is still valid, then
	// runs the write on a context that the lease's loss does not cancel, so
	// that a late write reaches the ledger's fence and is rejected there.
	// The context still carries the token, which middleware.RoundTripper
	// sends.
	var paused bool
	err = l.Commit(ctx, func(ctx context.Context, token fence.Token) error {
		paused = r.d.cfg.faults.on(faultPause) && r.maybePause(account, token.Fence)
		return r.d.ledger.put(ctx, key, strconv.FormatInt(balance+amount, 10))
	})
	if paused {
		r.d.pauseOutcome(r, account, l.Fence(), err)
	}
	switch {
	case err == nil:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(depositReply{Account: account, Balance: balance + amount, Fence: l.Fence()})
	case errors.Is(err, fence.ErrStale), errors.Is(err, lease.ErrLost), errors.Is(err, lease.ErrExpiring):
		// The refusal table's problem, with the route's lock name:
		// FENCE_STALE (409) for the ledger's rejection, LEASE_LOST or
		// LEASE_EXPIRING (503, retry after a second) for Commit's refusals.
		middleware.WriteError(w, req, err)
	default:
		r.failed(w, ctx, err, slow)
	}
}

// failed answers an error that is not the lease's: 503 when the ledger did
// not answer, after the slow clean-up if this handler is a slow one and the
// lease was lost meanwhile.
func (r *replica) failed(w http.ResponseWriter, ctx context.Context, err error, slow bool) {
	if ctx.Err() != nil {
		if slow {
			r.sleep(jitter(r.d.cfg.ttl/10, r.d.cfg.ttl/2))
		}
		return
	}
	http.Error(w, "ledger: "+err.Error(), http.StatusServiceUnavailable)
}

// ledgerClient calls the ledger. Its transport is middleware.RoundTripper:
// every call made on a lease's context carries the lease's token in the
// Fencing-Token header.
type ledgerClient struct {
	base   string
	client *http.Client
}

func (c *ledgerClient) get(ctx context.Context, key string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/ledger/"+key, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var e ledgerEntry
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		return 0, fmt.Errorf("ledger: %s: %w", resp.Status, err)
	}
	if e.Value == "" {
		return 0, nil
	}
	return strconv.ParseInt(e.Value, 10, 64)
}

// put writes value under key. A 409 FENCE_STALE is returned as an error
// that wraps fence.ErrStale.
func (c *ledgerClient) put(ctx context.Context, key, value string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	body, _ := json.Marshal(ledgerEntry{Value: value})
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base+"/ledger/"+key, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var p middleware.Problem
	_ = json.NewDecoder(resp.Body).Decode(&p)
	if p.Reason == reasonFenceStale {
		return fmt.Errorf("ledger: %w: %s", fence.ErrStale, p.Detail)
	}
	return fmt.Errorf("ledger: %s (%s)", resp.Status, p.Reason)
}
