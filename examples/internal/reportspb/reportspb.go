// Package reportspb stands in for the protoc-generated code of a small gRPC
// service, so that the examples build without protoc. It is what
// protoc-gen-go-grpc would generate from
//
//	syntax = "proto3";
//	package lockwatch.example;
//	import "google/protobuf/wrappers.proto";
//
//	service Reports {
//	  // Generate builds the report of an account and returns its summary.
//	  rpc Generate(google.protobuf.StringValue) returns (google.protobuf.StringValue);
//	  // Stream builds the report of an account and streams its pages.
//	  rpc Stream(google.protobuf.StringValue) returns (stream google.protobuf.StringValue);
//	}
//
// The messages are protobuf's well-known StringValue (the account id in,
// a line of text out). In a real service protoc writes this file; nothing
// in it is specific to lockwatch.
package reportspb

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Full method names: what the lockwatch interceptors use as the lock name.
const (
	ServiceName            = "lockwatch.example.Reports"
	GenerateFullMethodName = "/lockwatch.example.Reports/Generate"
	StreamFullMethodName   = "/lockwatch.example.Reports/Stream"
)

// ReportsServer is the server API of the Reports service.
type ReportsServer interface {
	Generate(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error)
	Stream(*wrapperspb.StringValue, grpc.ServerStreamingServer[wrapperspb.StringValue]) error
}

// RegisterReportsServer registers srv on s.
func RegisterReportsServer(s grpc.ServiceRegistrar, srv ReportsServer) {
	s.RegisterService(&serviceDesc, srv)
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*ReportsServer)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Generate", Handler: generateHandler}},
	Streams:     []grpc.StreamDesc{{StreamName: "Stream", Handler: streamHandler, ServerStreams: true}},
	Metadata:    "reports.proto",
}

func generateHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.StringValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(ReportsServer).Generate(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: GenerateFullMethodName}
	handler := func(ctx context.Context, req any) (any, error) {
		return srv.(ReportsServer).Generate(ctx, req.(*wrapperspb.StringValue))
	}
	return interceptor(ctx, in, info, handler)
}

func streamHandler(srv any, stream grpc.ServerStream) error {
	in := new(wrapperspb.StringValue)
	if err := stream.RecvMsg(in); err != nil {
		return err
	}
	return srv.(ReportsServer).Stream(in, &grpc.GenericServerStream[wrapperspb.StringValue, wrapperspb.StringValue]{ServerStream: stream})
}

// ReportsClient is the client API of the Reports service.
type ReportsClient interface {
	Generate(ctx context.Context, in *wrapperspb.StringValue, opts ...grpc.CallOption) (*wrapperspb.StringValue, error)
	Stream(ctx context.Context, in *wrapperspb.StringValue, opts ...grpc.CallOption) (grpc.ServerStreamingClient[wrapperspb.StringValue], error)
}

// NewReportsClient returns a client on cc.
func NewReportsClient(cc grpc.ClientConnInterface) ReportsClient { return reportsClient{cc} }

type reportsClient struct{ cc grpc.ClientConnInterface }

func (c reportsClient) Generate(ctx context.Context, in *wrapperspb.StringValue, opts ...grpc.CallOption) (*wrapperspb.StringValue, error) {
	out := new(wrapperspb.StringValue)
	if err := c.cc.Invoke(ctx, GenerateFullMethodName, in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

func (c reportsClient) Stream(ctx context.Context, in *wrapperspb.StringValue, opts ...grpc.CallOption) (grpc.ServerStreamingClient[wrapperspb.StringValue], error) {
	stream, err := c.cc.NewStream(ctx, &serviceDesc.Streams[0], StreamFullMethodName, opts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[wrapperspb.StringValue, wrapperspb.StringValue]{ClientStream: stream}
	if err := x.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}
