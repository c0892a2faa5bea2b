package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// Every refusal answers the same on HTTP and gRPC: the reason, the pair of
// status and code of the design's table, and the retry delay.
func TestRefusalsAnswerAlikeOnHTTPAndGRPC(t *testing.T) {
	for _, tc := range []struct {
		err    error
		of     func(error) refusal
		reason string
		status int
		code   codes.Code
		retry  time.Duration
	}{
		{&lease.NotAcquiredError{Key: "k", HolderTTL: 3 * time.Second}, acquireRefusal, ReasonContended, http.StatusConflict, codes.Aborted, 3 * time.Second},
		{&lease.UnknownError{Key: "k", Err: errors.New("timeout")}, acquireRefusal, ReasonUnknown, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{lease.ErrClosed, acquireRefusal, ReasonUnavailable, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{&fence.StaleError{Token: 41, HighWater: 42}, fenceRefusal, ReasonFenceStale, http.StatusConflict, codes.Aborted, 0},
		{fmt.Errorf("%w: x", fence.ErrMalformed), fenceRefusal, ReasonFenceMalformed, http.StatusBadRequest, codes.InvalidArgument, 0},
		{errMissing, fenceRefusal, ReasonFenceMissing, http.StatusPreconditionRequired, codes.FailedPrecondition, 0},
		{errKeyBusy, fenceRefusal, ReasonFenceBusy, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{errors.New("connection refused"), fenceRefusal, ReasonFenceStore, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{lease.ErrLost, func(error) refusal { return refuseLost }, ReasonLost, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			r := tc.of(tc.err)
			p := r.problem("lock", tc.err)
			assert.Equal(t, tc.reason, p.Reason)
			assert.Equal(t, tc.status, p.Status)
			assert.Equal(t, tc.retry, p.RetryAfter)

			st := status.Convert(r.grpcStatus("lock", tc.err))
			assert.Equal(t, tc.code, st.Code())
			assert.Equal(t, p.Detail, st.Message(), "one message for both")
			var info *errdetails.ErrorInfo
			var retry *errdetails.RetryInfo
			for _, d := range st.Details() {
				switch d := d.(type) {
				case *errdetails.ErrorInfo:
					info = d
				case *errdetails.RetryInfo:
					retry = d
				}
			}
			if assert.NotNil(t, info) {
				assert.Equal(t, tc.reason, info.GetReason())
				assert.Equal(t, ErrorDomain, info.GetDomain())
			}
			if tc.retry > 0 && assert.NotNil(t, retry) {
				assert.Equal(t, tc.retry, retry.GetRetryDelay().AsDuration())
			} else {
				assert.Nil(t, retry)
			}
		})
	}
}
