package middleware

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/code"
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
		{&lease.NotAcquiredError{Key: "k", HolderTTL: 3 * time.Second}, acquireRefusal, reasonContended, http.StatusConflict, codes.Aborted, 3 * time.Second},
		{fmt.Errorf("%w: timeout", lease.ErrUnknown), acquireRefusal, reasonUnknown, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{lease.ErrClosed, acquireRefusal, reasonUnavailable, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{&fence.StaleError{Token: mint("k", 41), HighWater: 42}, fenceRefusal, reasonFenceStale, http.StatusConflict, codes.Aborted, 0},
		{fmt.Errorf("%w: x", fence.ErrMalformed), fenceRefusal, reasonFenceMalformed, http.StatusBadRequest, codes.InvalidArgument, 0},
		{errMissing, fenceRefusal, reasonFenceMissing, http.StatusPreconditionRequired, codes.FailedPrecondition, 0},
		{fmt.Errorf("%w (admit ledger)", fence.ErrForeign), fenceRefusal, reasonFenceForeign, http.StatusForbidden, codes.PermissionDenied, 0},
		{fmt.Errorf("%w: unsigned (admit ledger)", fence.ErrForged), fenceRefusal, reasonFenceForged, http.StatusForbidden, codes.PermissionDenied, 0},
		{fmt.Errorf("%w: fence 9 (admit ledger)", fence.ErrAhead), fenceRefusal, reasonFenceAhead, http.StatusForbidden, codes.PermissionDenied, 0},
		{fmt.Errorf("%w: fence 9 (admit ledger)", fence.ErrUnscoped), fenceRefusal, reasonFenceUnscoped, http.StatusBadRequest, codes.InvalidArgument, 0},
		{errKeyBusy, fenceRefusal, reasonFenceBusy, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{errors.New("connection refused"), fenceRefusal, reasonFenceStoreUnavailable, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{lease.ErrLost, func(error) refusal { return refuseLost }, reasonLost, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{fmt.Errorf("%w: 1ms left", lease.ErrExpiring), func(err error) refusal { r, _ := handlerRefusal(err); return r }, reasonExpiring, http.StatusServiceUnavailable, codes.Unavailable, time.Second},
		{fmt.Errorf("%w: %w", errSaturated, &lease.NotAcquiredError{Key: "k"}), acquireRefusal, reasonSaturated, http.StatusTooManyRequests, codes.ResourceExhausted, time.Second},
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
				assert.Equal(t, errorDomain, info.GetDomain())
			}
			if tc.retry > 0 && assert.NotNil(t, retry) {
				assert.Equal(t, tc.retry, retry.GetRetryDelay().AsDuration())
			} else {
				assert.Nil(t, retry)
			}
		})
	}
}

// A contended refusal says whether the holder is on this replica, names
// the holder's replica when its Locker has a Config.Replica, and stays
// generic when neither is known.
func TestContendedRefusalNamesTheHolder(t *testing.T) {
	elsewhere := acquireRefusal(&lease.NotAcquiredError{Key: "k"}).problem("lock", nil)
	assert.Equal(t, "another replica is doing this work", elsewhere.Detail)
	here := &lease.NotAcquiredError{Key: "k", HeldHere: true}
	assert.Equal(t, heldHereDetail, acquireRefusal(here).problem("lock", nil).Detail)
	joined := errors.Join(here, errors.New("wait over"))
	assert.Equal(t, heldHereDetail, status.Convert(acquireRefusal(joined).grpcStatus("lock", joined)).Message())
	assert.Equal(t, elsewhere.Title, acquireRefusal(here).problem("lock", nil).Title, "one title per type")

	named := &lease.NotAcquiredError{Key: "k", HolderReplica: "pod-a"}
	assert.Equal(t, "replica pod-a is doing this work", acquireRefusal(named).problem("lock", nil).Detail)
	joined = errors.Join(named, errors.New("wait over"))
	assert.Equal(t, "replica pod-a is doing this work", status.Convert(acquireRefusal(joined).grpcStatus("lock", joined)).Message())
	named.HeldHere = true
	assert.Equal(t, heldHereDetail, acquireRefusal(named).problem("lock", nil).Detail, "this replica's own lease says so")
}

// rows are the refusals of refusal.go by variable name.
// TestRowsAreAllTheRefusals keeps the list whole.
var rows = map[string]refusal{
	"refuseContended":   refuseContended,
	"refuseUnknown":     refuseUnknown,
	"refuseUnavailable": refuseUnavailable,
	"refuseLost":        refuseLost,
	"refuseExpiring":    refuseExpiring,
	"refuseSaturated":   refuseSaturated,
	"refuseStale":       refuseStale,
	"refuseMalformed":   refuseMalformed,
	"refuseMissing":     refuseMissing,
	"refuseForeign":     refuseForeign,
	"refuseForged":      refuseForged,
	"refuseAhead":       refuseAhead,
	"refuseUnscoped":    refuseUnscoped,
	"refuseBusy":        refuseBusy,
	"refuseFenceStore":  refuseFenceStore,
}

// TestRowsAreAllTheRefusals: every package-level refusal{...} of
// refusal.go is in rows, so that a new one cannot miss the doc check.
func TestRowsAreAllTheRefusals(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "refusal.go", nil, 0)
	require.NoError(t, err)
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.CompositeLit); ok {
					if id, ok := lit.Type.(*ast.Ident); ok && id.Name == "refusal" {
						declared = append(declared, vs.Names[i].Name)
					}
				}
			}
		}
	}
	var listed []string
	for name := range rows {
		listed = append(listed, name)
	}
	sort.Strings(declared)
	sort.Strings(listed)
	assert.Equal(t, declared, listed)
}

// docRow is one row of the package doc's refusal table.
type docRow struct {
	status int
	code   string
	retry  bool
}

// docRefusals reads the refusal table of the package doc (doc.go): the
// indented lines after the one that starts with "reason".
func docRefusals(t *testing.T) (doc string, table map[string]docRow) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	require.NotNil(t, f.Doc, "doc.go has the package doc")
	doc = f.Doc.Text()
	table = map[string]docRow{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		fields := strings.Fields(line)
		switch {
		case !in:
			in = strings.HasPrefix(line, "\t") && len(fields) > 0 && fields[0] == "reason"
			continue
		case !strings.HasPrefix(line, "\t") || len(fields) == 0:
			return doc, table
		}
		require.GreaterOrEqual(t, len(fields), 5, "row %q: reason, HTTP, gRPC, retry, when", line)
		status, err := strconv.Atoi(fields[1])
		require.NoError(t, err, "row %q: the HTTP status", line)
		require.Contains(t, []string{"yes", "no"}, fields[3], "row %q: retry", line)
		require.NotContains(t, table, fields[0], "reason listed twice")
		table[fields[0]] = docRow{status: status, code: fields[2], retry: fields[3] == "yes"}
	}
	require.True(t, in, "the package doc has a table whose header starts with reason")
	return doc, table
}

// TestDocListsTheRefusals: the package doc's table, which clients in other
// languages match against, has exactly the code's reasons, each with its
// HTTP status, gRPC code and retry hint; and it names the ErrorInfo domain
// and the problem type.
func TestDocListsTheRefusals(t *testing.T) {
	doc, table := docRefusals(t)
	code := map[string]docRow{}
	for name, r := range rows {
		require.NotContains(t, code, r.reason, "%s: a reason has one row", name)
		code[r.reason] = docRow{status: r.status, code: codeName(r.code), retry: r.retry > 0}
	}
	assert.Equal(t, code, table, "the package doc's table (doc.go) and refusal.go's rows")
	assert.Contains(t, doc, `domain "`+errorDomain+`"`)
	p := refuseStale.problem("", nil)
	assert.Contains(t, doc, strings.TrimSuffix(p.Type, p.Reason)+" followed by the reason")
}

// TestGuardDocNamesItsRefusals: Guard's doc, which says what a guarded
// request may be refused with, names every FENCE_ reason of the table.
func TestGuardDocNamesItsRefusals(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "guard.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var doc string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE && g.Doc != nil {
			if ts, ok := g.Specs[0].(*ast.TypeSpec); ok && ts.Name.Name == "Guard" {
				doc = g.Doc.Text()
			}
		}
	}
	require.NotEmpty(t, doc, "guard.go documents type Guard")
	var fenceReasons int
	for _, r := range rows {
		if strings.HasPrefix(r.reason, "FENCE_") {
			fenceReasons++
			assert.Contains(t, doc, r.reason, "Guard's doc does not name %s", r.reason)
		}
	}
	assert.Equal(t, 9, fenceReasons, "the guard's refusals: stale, malformed, missing, foreign, forged, ahead, unscoped, busy, store unavailable")
}

// codeName is a gRPC code as the doc writes it: the google.rpc.Code name.
func codeName(c codes.Code) string { return code.Code_name[int32(c)] }
