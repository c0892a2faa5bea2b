package middleware

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

// chatMethod is a bidirectional stream served without generated code; its
// messages are health check requests (any proto message would do).
const chatMethod = "/lockwatch.test.Chat/Chat"

var chatStream = grpc.StreamDesc{StreamName: "Chat", ServerStreams: true, ClientStreams: true}

// serveChat serves run as chatMethod behind opts and returns a connection.
func serveChat(t testing.TB, run func(grpc.ServerStream) error, opts []grpc.ServerOption, dialOpts ...grpc.DialOption) *grpc.ClientConn {
	desc := chatStream
	desc.Handler = func(_ any, stream grpc.ServerStream) error { return run(stream) }
	return serveConn(t, func(s *grpc.Server) {
		s.RegisterService(&grpc.ServiceDesc{ServiceName: "lockwatch.test.Chat", HandlerType: (*any)(nil),
			Streams: []grpc.StreamDesc{desc}}, struct{}{})
	}, opts, dialOpts...)
}

// loseLeases deletes every lock key in srv, so that the next renewal of
// each lease is rejected: the lease is lost as when another holder took
// the key.
func loseLeases(t *testing.T, srv *redistest.Server) {
	keys, err := srv.Do(context.Background(), "KEYS", "*:l")
	require.NoError(t, err)
	require.NotEmpty(t, keys, "no lock key to delete")
	for _, k := range keys.([]any) {
		_, err := srv.Do(context.Background(), "DEL", k)
		require.NoError(t, err)
	}
}

// reason returns the ErrorInfo reason of a status error, "" for none.
func reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// blockedFor reports whether the call that started at the instant in
// since (UnixNano, 0 for none) has been running for at least d.
func blockedFor(since *atomic.Int64, d time.Duration) bool {
	st := since.Load()
	return st != 0 && time.Since(time.Unix(0, st)) >= d
}

// TestStreamLossInterruptsBlockedCalls: a stream handler blocked in
// RecvMsg (the client sends nothing) or SendMsg (the client reads nothing)
// returns the loss status soon after its lease is lost, as a unary handler
// watching its context would; every later call returns it at once, and the
// abandoned receive never writes into the handler's message.
func TestStreamLossInterruptsBlockedCalls(t *testing.T) {
	for _, blockIn := range []string{"RecvMsg", "SendMsg"} {
		t.Run(blockIn, func(t *testing.T) {
			srv := redistest.Start(t)
			lk := newLocker(t, srv.Client(t), telemetrytest.New(t).Tel, lease.Config{TTL: 900 * time.Millisecond})
			leases := make(chan *lease.Lease, 1)
			returned := make(chan error, 1)
			late := make(chan struct{})
			sent := sync.OnceFunc(func() { close(late) })
			t.Cleanup(sent) // a handler that failed does not wait for it
			var since atomic.Int64
			big := &grpc_health_v1.HealthCheckRequest{Service: strings.Repeat("x", 16<<10)}
			run := func(stream grpc.ServerStream) error {
				var first grpc_health_v1.HealthCheckRequest
				if err := stream.RecvMsg(&first); err != nil {
					return err
				}
				leases <- lease.FromContext(stream.Context())
				var m grpc_health_v1.HealthCheckRequest
				var err error
				for err == nil {
					since.Store(time.Now().UnixNano())
					if blockIn == "RecvMsg" {
						err = stream.RecvMsg(&m)
					} else {
						err = stream.SendMsg(big)
					}
					since.Store(0)
				}
				returned <- err
				<-late // the client has sent a message the abandoned RecvMsg may take
				assert.Never(t, func() bool { return m.GetService() != "" }, 100*time.Millisecond, 5*time.Millisecond,
					"the abandoned RecvMsg wrote into the handler's message")
				start := time.Now()
				assert.Equal(t, reasonLost, reason(stream.RecvMsg(&m)), "a later RecvMsg returns the loss")
				assert.Equal(t, reasonLost, reason(stream.SendMsg(big)), "a later SendMsg returns the loss")
				assert.Less(t, time.Since(start), time.Second, "later calls return at once")
				return err
			}
			conn := serveChat(t, run, []grpc.ServerOption{grpc.ChainStreamInterceptor(StreamServerInterceptor(lk, streamKey, Config{}))},
				grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)) // a fixed window: SendMsg blocks soon
			ctx, cancel := context.WithCancel(withLockKey(testCtx(t), "42"))
			defer cancel()
			cs, err := conn.NewStream(ctx, &chatStream, chatMethod)
			require.NoError(t, err)
			require.NoError(t, cs.SendMsg(&grpc_health_v1.HealthCheckRequest{Service: "first"}))
			l := <-leases
			require.NotNil(t, l, "no lease on the stream")
			require.Eventually(t, func() bool { return blockedFor(&since, 100*time.Millisecond) }, 10*time.Second, 5*time.Millisecond,
				"the handler never blocked in %s", blockIn)

			loseLeases(t, srv)
			select {
			case <-l.Context().Done():
			case <-time.After(10 * time.Second):
				require.FailNow(t, "the lease was not lost")
			}
			var err2 error
			select {
			case err2 = <-returned:
			case <-time.After(2 * time.Second):
				require.FailNow(t, blockIn+" still blocks 2s after the lease was lost")
			}
			code, info, _ := details(t, err2)
			assert.Equal(t, codes.Unavailable, code)
			assert.Equal(t, reasonLost, info.GetReason())

			_ = cs.SendMsg(&grpc_health_v1.HealthCheckRequest{Service: "late"})
			sent()
			for err == nil { // the answer comes after the messages the server sent
				err = cs.RecvMsg(&grpc_health_v1.HealthCheckRequest{})
			}
			code, info, _ = details(t, err)
			assert.Equal(t, codes.Unavailable, code, "the client sees the loss")
			assert.Equal(t, reasonLost, info.GetReason())
		})
	}
}

// TestMoveIsDecoding: a received message moved into the caller's equals
// the one decoded, whatever the caller's held before.
func TestMoveIsDecoding(t *testing.T) {
	src, err := structpb.NewStruct(map[string]any{"a": "x", "b": []any{1.0, "two", map[string]any{"c": true}}})
	require.NoError(t, err)
	src.ProtoReflect().SetUnknown(protowire.AppendTag(nil, 99, protowire.VarintType))
	want := proto.Clone(src)
	dst, err := structpb.NewStruct(map[string]any{"old": "gone"})
	require.NoError(t, err)
	move(dst, src)
	assert.True(t, proto.Equal(want, dst), "got %v", dst)
}

// BenchmarkStreamMessage measures what interrupting blocked calls costs a
// message on a healthy lease: a goroutine and a fresh message per call,
// against a stream that only carries the lease's context. Real server on
// loopback, 64-byte messages.
func BenchmarkStreamMessage(b *testing.B) {
	srv := redistest.Start(b)
	lk := lease.NewLocker(srv.Client(b), lease.Config{Namespace: "bench"})
	b.Cleanup(func() { _ = lk.Close() })
	l, err := lk.Acquire(context.Background(), "42")
	require.NoError(b, err)
	b.Cleanup(func() { _ = l.Release(context.Background()) })
	wraps := map[string]func(grpc.ServerStream) grpc.ServerStream{
		"context only": func(ss grpc.ServerStream) grpc.ServerStream {
			return &contextStream{ServerStream: ss, ctx: l.Context()}
		},
		"interruptible": func(ss grpc.ServerStream) grpc.ServerStream {
			return &leaseStream{ServerStream: ss, ctx: l.Context(), name: "bench"}
		},
	}
	msg := &grpc_health_v1.HealthCheckRequest{Service: strings.Repeat("m", 64)}
	for _, dir := range []string{"recv", "send"} {
		for _, name := range []string{"context only", "interruptible"} {
			b.Run(dir+"/"+name, func(b *testing.B) {
				n := b.N
				wrap := wraps[name]
				run := func(stream grpc.ServerStream) error {
					ss := wrap(stream)
					var m grpc_health_v1.HealthCheckRequest
					if dir == "recv" {
						for {
							if err := ss.RecvMsg(&m); err != nil {
								return nil // io.EOF: the client sent all
							}
						}
					}
					for range n {
						if err := ss.SendMsg(msg); err != nil {
							return err
						}
					}
					return nil
				}
				conn := serveChat(b, run, nil)
				cs, err := conn.NewStream(context.Background(), &chatStream, chatMethod)
				require.NoError(b, err)
				var m grpc_health_v1.HealthCheckRequest
				b.ReportAllocs()
				b.ResetTimer()
				if dir == "recv" {
					for range n {
						require.NoError(b, cs.SendMsg(msg))
					}
					require.NoError(b, cs.CloseSend())
				}
				for cs.RecvMsg(&m) == nil {
				}
			})
		}
	}
}
