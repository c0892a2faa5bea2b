package alerts

import "github.com/grafana/grafana-foundation-sdk/go/alerting"

// noData is what a Grafana-managed rule does when its query returns no
// series at all (its noDataState), and why. Prometheus has no such state:
// there an empty result never fires. Each alert of the catalogue chooses
// its own, because an empty answer means health for most queries and
// blindness for a query that answers for every job it watches.
type noData struct {
	State alerting.RuleNoDataState
	Why   string
}

// noDataStates are the states Grafana accepts.
var noDataStates = []alerting.RuleNoDataState{
	alerting.RuleNoDataStateOK, alerting.RuleNoDataStateAlerting,
	alerting.RuleNoDataStateNoData, alerting.RuleNoDataStateKeepLast,
}
