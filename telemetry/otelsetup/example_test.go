package otelsetup_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/lockwatch/lockwatch/telemetry/otelsetup"
)

func Example() {
	ctx := context.Background()
	providers, err := otelsetup.New(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer providers.Shutdown(ctx)
	providers.SetGlobal() // lockwatch's default telemetry reports here now

	// In a service: http.Handle("/metrics", providers.Handler()).
	srv := httptest.NewServer(providers.Handler())
	defer srv.Close()

	tel := telemetry.New()
	tel.LateCompletion(ctx, "report")

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, telemetry.PromLeaseLateCompletions) {
			fmt.Println(line[:strings.IndexByte(line, '{')], line[strings.LastIndexByte(line, ' ')+1:])
		}
	}
	// Output: lockwatch_lease_late_completions_total 1
}
