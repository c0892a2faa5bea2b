package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/lockwatch/lockwatch/middleware"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// reasonFenceBusy is the refusal reason of a guarded request that gave up
// waiting for its key (the middleware package doc's table).
const reasonFenceBusy = "FENCE_BUSY"

// guardClient is one process's client of the guarded register.
type guardClient struct {
	base string // http://host:port
	http *http.Client
	conn *grpc.ClientConn
}

func newGuardClient(addrs guardAddrs) (*guardClient, error) {
	conn, err := grpc.NewClient(addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &guardClient{base: "http://" + addrs.HTTP, http: &http.Client{Transport: &http.Transport{}}, conn: conn}, nil
}

func (c *guardClient) close() error {
	c.http.CloseIdleConnections()
	return c.conn.Close()
}

// errAnswered ends a slow body the server answered before reading it all:
// a guard refuses on the headers alone.
var errAnswered = errors.New("chaos: answered before the body was sent")

// write writes o.Value with o.Token, in its wire form, through the entry
// point o.Via, and fills in the outcome: ok, stale (the guard's 409 or
// ABORTED), error for a write the guard certainly did not admit (busy),
// unknown otherwise.
//
// The write is slow where the entry point lets it be: an HTTP body sends
// its first half at once and the rest o.Slow later, a stream opens and
// sends its value o.Slow later; midway runs at that point, the request
// sent (and usually admitted) and not finished, so that a holder stopped
// there holds its key in the guard while later holders come for it.
// midway's wait is the parent's to bound (it resumes a stopped process), so
// the write's opTimeout stands still while it runs.
func (c *guardClient) write(ctx context.Context, o *op, midway func()) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline := time.AfterFunc(opTimeout, cancel)
	defer deadline.Stop()
	hold := func() {
		deadline.Stop()
		midway()
		deadline.Reset(opTimeout)
	}
	ctx = metadata.AppendToOutgoingContext(ctx, tokenMetadata, o.Token.String(), keyMetadata, o.Key)
	switch o.Via {
	case viaPut, viaPost:
		o.Outcome, o.Err = c.writeHTTP(ctx, o, hold)
	case viaUnary:
		hold()
		o.Outcome, o.Err = rpcOutcome(c.conn.Invoke(ctx, methodWrite, wrapperspb.String(o.Value), new(emptypb.Empty)))
	default:
		o.Outcome, o.Err = rpcOutcome(c.writeStream(ctx, o, hold))
	}
}

func (c *guardClient) writeHTTP(ctx context.Context, o *op, hold func()) (outcome, why string) {
	method := http.MethodPut
	if o.Via == viaPost {
		method = http.MethodPost
	}
	body, pw := io.Pipe()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		half := len(o.Value) / 2
		_, err := io.WriteString(pw, o.Value[:half])
		hold()
		sleep(o.Slow, ctx.Done())
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			_, err = io.WriteString(pw, o.Value[half:])
		}
		pw.CloseWithError(err) // nil: EOF
	}()
	// Waits for the body's goroutine, whose hold may still run when the
	// answer came first.
	defer func() { <-sent }()
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/reg/"+url.PathEscape(o.Key), body)
	if err != nil {
		body.CloseWithError(err)
		return outUnknown, err.Error()
	}
	req.Header.Set(tokenHeader, o.Token.String())
	resp, err := c.http.Do(req)
	body.CloseWithError(errAnswered)
	if err != nil {
		return outUnknown, err.Error()
	}
	defer resp.Body.Close()
	var p middleware.Problem
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&p)
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return outOK, ""
	case resp.StatusCode == http.StatusConflict:
		return outStale, ""
	case p.Reason == reasonFenceBusy:
		return outError, p.Reason
	}
	return outUnknown, fmt.Sprintf("%s %s", resp.Status, p.Reason)
}

func (c *guardClient) writeStream(ctx context.Context, o *op, hold func()) error {
	s, err := c.conn.NewStream(ctx, &grpc.StreamDesc{StreamName: "WriteStream", ClientStreams: true}, methodWriteStream)
	if err != nil {
		return err
	}
	hold()
	sleep(o.Slow, ctx.Done())
	// A refused stream ends the send with io.EOF; RecvMsg has its status.
	if err := s.SendMsg(wrapperspb.String(o.Value)); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	return s.RecvMsg(new(emptypb.Empty))
}

// rpcOutcome classifies a gRPC write's status as writeHTTP does an answer.
func rpcOutcome(err error) (outcome, why string) {
	st := status.Convert(err)
	switch st.Code() {
	case codes.OK:
		return outOK, ""
	case codes.Aborted:
		return outStale, ""
	case codes.Unavailable:
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == reasonFenceBusy {
				return outError, info.GetReason()
			}
		}
	}
	return outUnknown, err.Error()
}
