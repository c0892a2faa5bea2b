// pint (github.com/cloudflare/pint, pinned in tools/pint/go.mod) over the
// generated recording and alerting rules, alerts/lockwatch.rules.yaml. make pint runs
//
//   pint --offline lint --min-severity=info --fail-on=warning alerts/lockwatch.rules.yaml
//
// --offline turns off every check that queries a Prometheus server
// (promql/series, promql/rate, promql/counter, promql/range_query,
// promql/vector_matching, labels/conflict, alerts/count, …); what stays on
// reads the file alone: the defaults (promql/syntax, promql/fragile,
// promql/regexp, promql/impossible, promql/nan, alerts/for, alerts/template,
// alerts/comparison, rule/dependency, group/interval), rule/duplicate (off
// line too, but pint only runs it per configured Prometheus server, hence the
// block below) and the rule blocks at the end. Fix a finding in the
// generator (alerts/rules.go) and go generate ./alerts/..., never in the
// YAML: a "# pint disable" comment there would be overwritten.

// The Prometheus server of make e2e (loopback only). Its uri comes from the
// environment, LOCKWATCH_PINT_PROMETHEUS: examples/demo's TestWholeStack
// (build tag e2e) sets it to the Prometheus it starts, which scrapes the
// demo with these rules loaded, and make pint to a loopback default that
// nothing is sent to (offline). pint refuses the config when it is unset.
// Online (pint lint without --offline) the online checks above query it,
// and required = true makes an unreachable server a failure, not a warning.
prometheus "e2e" {
  uri      = "${ENV_LOCKWATCH_PINT_PROMETHEUS}"
  timeout  = "30s"
  required = true
  include  = ["(.*/)?alerts/lockwatch\\.rules\\.yaml"]
}

// Every alert keeps job: Config.JobSelector narrows the rules to jobs, the
// descriptions name it, and Alertmanager groups by it.
rule {
  match {
    kind = "alerting"
  }
  aggregate ".+" {
    keep    = ["job"]
    comment = "Every lockwatch alert is per job: keep `job` in the aggregation."
  }
}

// The fencing alerts are per resource (the fence is the resource's), the
// election alerts per election, the permits alerts per semaphore,
// LockwatchMetricsAbsent per job alone, every other alert per lock.
rule {
  match {
    kind = "alerting"
    name = "Lockwatch(StaleWrite|StaleWriteSpike|FenceRejections|FenceTokensRefused)"
  }
  aggregate ".+" {
    keep    = ["resource"]
    comment = "Fencing alerts are per resource: keep `resource` in the aggregation."
  }
}
rule {
  match {
    kind = "alerting"
    name = "LockwatchElection.+"
  }
  aggregate ".+" {
    keep    = ["election"]
    comment = "Election alerts are per election: keep `election` in the aggregation."
  }
}
rule {
  match {
    kind = "alerting"
    name = "LockwatchPermits.+"
  }
  aggregate ".+" {
    keep    = ["semaphore"]
    comment = "Permits alerts are per semaphore: keep `semaphore` in the aggregation."
  }
}
rule {
  match {
    kind = "alerting"
  }
  ignore {
    name = "Lockwatch(StaleWrite|StaleWriteSpike|FenceRejections|FenceTokensRefused|Election.+|Permits.+|MetricsAbsent)"
  }
  aggregate ".+" {
    keep    = ["lock_name"]
    comment = "Lease alerts are per lock: keep `lock_name` in the aggregation."
  }
}

// The recording rules (alerts/recording.go) record at the levels their
// names say, every one per job and per lock: the dashboards filter them by
// job, instance and lock_name, and the alerts read them per job and lock.
// (The level:metric:operations naming itself is a test, alerts'
// TestEveryRecordingRuleIsTested.)
rule {
  match {
    kind = "recording"
  }
  aggregate ".+" {
    keep    = ["job", "lock_name"]
    comment = "Recorded series are per job and lock: keep `job` and `lock_name` in the aggregation."
  }
}

// The monitoring-mixin conventions of alerts/doc.go: a Lockwatch name, a
// severity that Alertmanager routes (critical pages, warning opens a ticket),
// a summary, a description and a runbook link to the alert's RUNBOOK.md
// section.
rule {
  match {
    kind = "alerting"
  }

  name "Lockwatch[A-Z][A-Za-z0-9]+" {
    comment  = "Alert names are CamelCase and start with Lockwatch."
    severity = "warning"
  }

  label "severity" {
    required = true
    value    = "(critical|warning)"
    comment  = "alertmanager.example.yml routes severity critical (page) and warning (ticket) only."
  }

  annotation "summary" {
    required = true
  }
  annotation "description" {
    required = true
  }
  annotation "runbook_url" {
    required = true
    value    = "https?://\\S+/RUNBOOK\\.md#lockwatch[a-z0-9]+"
    comment  = "Link the alert's section of alerts/RUNBOOK.md."
  }
}
