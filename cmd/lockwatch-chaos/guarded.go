package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The guarded register's resource name (a bounded metric attribute) and
// its entry points: two HTTP routes and two gRPC methods, all writing the
// same register, as a service's PUT, POST and RPCs write one table.
const (
	resourceGuard = "chaos_guard"

	viaPut    = "http-put"
	viaPost   = "http-post"
	viaUnary  = "grpc-unary"
	viaStream = "grpc-stream"

	guardService      = "lockwatch.chaos.GuardedRegister"
	methodWrite       = "/" + guardService + "/Write"
	methodWriteStream = "/" + guardService + "/WriteStream"
	// keyMetadata names the register a gRPC write is for: a stream's key
	// must be known when it opens, before any message has been read.
	keyMetadata = "register-key"

	// The token's wire names, which the middleware's package doc gives to
	// clients: the holders send it in them, as any client would.
	tokenHeader   = "Fencing-Token"
	tokenMetadata = "fencing-token"
)

// guardEntryPoints are the ways a holder can write the guarded register; it
// picks one at random per write.
var guardEntryPoints = []string{viaPut, viaPost, viaUnary, viaStream}

// guardedRegister is the third register of every key: a resource served by
// the parent process only, that takes every write it is handed and does not
// look at tokens. The Guard in front of its entry points, its admit check
// and its per-key serialization, is the only fence, which is exactly what
// middleware.Guard promises for one process; so the order of the accept
// log, exact because it is appended under the lock that applies the write,
// tests that promise and nothing else.
type guardedRegister struct {
	mu     sync.Mutex
	values map[string]string
	log    []acceptEntry
}

func newGuardedRegister() *guardedRegister { return &guardedRegister{values: map[string]string{}} }

func (g *guardedRegister) accept(key string, token fence.Token, value string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.values[key] = value
	g.log = append(g.log, acceptEntry{Key: key, Fence: token.Fence, Value: value})
}

// accepted returns the accept log so far.
func (g *guardedRegister) accepted() []acceptEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]acceptEntry(nil), g.log...)
}

// newGuard is the run's one Guard: admitted by a fence.RedisStore of its
// own resource on the never-faulted fence Redis. A write waits at most half
// a TTL for its key, so that a holder stopped with its request admitted and
// its body unfinished does not stall every later write of the key for as
// long as it is stopped: they are refused busy, never admitted.
func newGuard(client redis.UniversalClient, tel *telemetry.Telemetry, ttl time.Duration) *middleware.Guard {
	store := fence.NewRedisStore(client, resourceGuard, fence.RedisConfig{Namespace: fenceNS, LockNamespace: lockNamespace, Telemetry: tel})
	return middleware.NewGuard(store, middleware.GuardConfig{Wait: ttl / 2})
}

// guardServer serves a guardedRegister on loopback: HTTP and gRPC.
type guardServer struct {
	addrs guardAddrs
	http  *http.Server
	grpc  *grpc.Server
	wg    sync.WaitGroup
}

// guardAddrs is where the guarded register is served.
type guardAddrs struct {
	HTTP string `json:"http"` // host:port
	GRPC string `json:"grpc"`
}

// serveGuarded serves reg through its four entry points. guard is called
// once per entry point: the run passes one that returns its one Guard every
// time, a test of the defect of one lock table per route a new one each
// time. A nil guard serves every entry point unguarded (-unfenced).
func serveGuarded(reg *guardedRegister, guard func() *middleware.Guard) (*guardServer, error) {
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	grpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		httpLn.Close()
		return nil, err
	}
	wrap := func(h http.Handler) http.Handler { return h }
	var opts []grpc.ServerOption
	if guard != nil {
		pathKey := func(r *http.Request) string { return r.PathValue("key") }
		wrap = func(h http.Handler) http.Handler { return guard().HTTP(pathKey)(h) }
		opts = append(opts,
			grpc.ChainUnaryInterceptor(guard().UnaryServerInterceptor(func(ctx context.Context, _ string, _ any) string { return rpcKey(ctx) })),
			grpc.ChainStreamInterceptor(guard().StreamServerInterceptor(func(ctx context.Context, _ string) string { return rpcKey(ctx) })))
	}
	mux := http.NewServeMux()
	mux.Handle("PUT /reg/{key}", wrap(http.HandlerFunc(reg.serveHTTP)))
	mux.Handle("POST /reg/{key}", wrap(http.HandlerFunc(reg.serveHTTP)))
	s := &guardServer{
		addrs: guardAddrs{HTTP: httpLn.Addr().String(), GRPC: grpcLn.Addr().String()},
		http:  &http.Server{Handler: mux, ReadHeaderTimeout: opTimeout},
		grpc:  grpc.NewServer(opts...),
	}
	s.grpc.RegisterService(&grpc.ServiceDesc{
		ServiceName: guardService,
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Write", Handler: reg.unaryWrite}},
		Streams:     []grpc.StreamDesc{{StreamName: "WriteStream", Handler: reg.streamWrite, ClientStreams: true}},
	}, reg)
	s.wg.Go(func() { _ = s.http.Serve(httpLn) })
	s.wg.Go(func() { _ = s.grpc.Serve(grpcLn) })
	return s, nil
}

// close stops both servers once every holder has finished: a write still
// under way is cut off, and its holder already recorded it as unknown.
func (s *guardServer) close() error {
	err := s.http.Close()
	s.grpc.Stop()
	s.wg.Wait()
	return err
}

// serveHTTP applies the body as the value, with the token the request
// carries (the register records it; it does not check it).
func (g *guardedRegister) serveHTTP(w http.ResponseWriter, r *http.Request) {
	token, err := parseToken(r.Header.Values(tokenHeader))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	value, err := io.ReadAll(r.Body)
	if err != nil { // the client went away mid-body: nothing is written
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	g.accept(r.PathValue("key"), token, string(value))
	w.WriteHeader(http.StatusNoContent)
}

func (g *guardedRegister) unaryWrite(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.StringValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	handler := func(ctx context.Context, req any) (any, error) {
		return &emptypb.Empty{}, g.acceptRPC(ctx, req.(*wrapperspb.StringValue).GetValue())
	}
	if interceptor == nil {
		return handler(ctx, in)
	}
	return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: methodWrite}, handler)
}

// streamWrite is the client-streaming form: one value, then the close.
func (g *guardedRegister) streamWrite(_ any, stream grpc.ServerStream) error {
	in := new(wrapperspb.StringValue)
	if err := stream.RecvMsg(in); err != nil {
		return err
	}
	if err := g.acceptRPC(stream.Context(), in.GetValue()); err != nil {
		return err
	}
	return stream.SendMsg(&emptypb.Empty{})
}

func (g *guardedRegister) acceptRPC(ctx context.Context, value string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	token, err := parseToken(md.Get(tokenMetadata))
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	key := rpcKey(ctx)
	if key == "" {
		return status.Error(codes.InvalidArgument, "no "+keyMetadata+" metadata")
	}
	g.accept(key, token, value)
	return nil
}

// parseToken reads the token a write carries, which with -unfenced no
// Guard has checked: one value, in fence.Parse's form.
func parseToken(values []string) (fence.Token, error) {
	if len(values) != 1 {
		return fence.Token{}, fmt.Errorf("%d fencing token values, want one", len(values))
	}
	return fence.Parse(values[0])
}

func rpcKey(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(keyMetadata); len(v) == 1 {
		return v[0]
	}
	return ""
}
