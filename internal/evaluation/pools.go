package evaluation

import (
	blisv1alpha1 "github.com/inference-sim/blis-operator/api/v1alpha1"
	"github.com/inference-sim/blis-operator/internal/engine/metrics"
	"github.com/inference-sim/blis-operator/internal/engine/sim"
	"github.com/inference-sim/blis-operator/internal/engine/workload"
)

// poolRow is one pool's metrics of one seed (or their mean over seeds), aligned with poolDefs.
type poolRow struct {
	name     string
	replicas int32
	values   [len(poolDefs)]float64
}

// poolDef is one number of status.metrics.pools: how a seed's pool report gives it and where
// it goes; integer marks counts (a mean over seeds is rounded to the nearest integer).
type poolDef struct {
	get     func(p *sim.PoolReport, pd *sim.PDStats, as *sim.PoolAutoscaleStats) float64
	set     func(m *blisv1alpha1.PoolMetrics, v float64)
	integer bool
}

// poolDefs are the pool metrics in status order.
var poolDefs = [...]poolDef{
	{func(p *sim.PoolReport, _ *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 {
		return float64(p.Metrics.CompletedRequests)
	},
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.CompletedRequests = roundCount(v) }, true},
	{func(p *sim.PoolReport, _ *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 {
		return p.Metrics.TTFTMeanMs
	},
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.TtftMeanMs = v }, false},
	{func(p *sim.PoolReport, _ *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 { return p.Metrics.TTFTP99Ms },
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.TtftP99Ms = v }, false},
	{func(p *sim.PoolReport, _ *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 { return p.Metrics.ITLP99Ms },
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.ItlP99Ms = v }, false},
	{func(p *sim.PoolReport, _ *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 { return p.Metrics.E2EMeanMs },
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.E2eMeanMs = v }, false},
	{func(p *sim.PoolReport, _ *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 { return p.Metrics.E2EP99Ms },
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.E2eP99Ms = v }, false},
	{func(p *sim.PoolReport, _ *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 {
		return p.Metrics.ResponsesPerSec
	},
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.ResponsesPerSec = v }, false},
	{func(p *sim.PoolReport, _ *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 {
		return p.Metrics.TokensPerSec
	},
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.TokensPerSec = v }, false},
	{func(p *sim.PoolReport, _ *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 { return p.PeakKVUtilization },
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.PeakKVUtilization = v }, false},
	{func(_ *sim.PoolReport, pd *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 {
		return float64(pd.Transfers)
	},
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.KVTransfers = roundCount(v) }, true},
	{func(_ *sim.PoolReport, pd *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 {
		return float64(pd.TransferredBytes)
	},
		func(m *blisv1alpha1.PoolMetrics, v float64) { m.KVTransferredBytes = roundCount(v) }, true},
	{func(_ *sim.PoolReport, pd *sim.PDStats, _ *sim.PoolAutoscaleStats) float64 {
		if pd.Transfers == 0 {
			return 0
		}
		return float64(pd.TransferUs) / float64(pd.Transfers) / 1e3
	}, func(m *blisv1alpha1.PoolMetrics, v float64) { m.KVTransferMeanMs = v }, false},
	{func(_ *sim.PoolReport, _ *sim.PDStats, as *sim.PoolAutoscaleStats) float64 {
		if as == nil {
			return 0
		}
		return as.ReplicaSeconds
	}, func(m *blisv1alpha1.PoolMetrics, v float64) { m.ReplicaSeconds = v }, false},
}

// roundCount rounds a count (or a mean of counts over seeds) to the nearest integer.
func roundCount(v float64) int64 { return int64(v + 0.5) }

// poolRows are the pool metrics of one seed's result (nil without disaggregation).
func poolRows(res *sim.Result, names *workload.Tables, targets []metrics.SLOTarget) []poolRow {
	reports := res.PoolReports(names, metrics.Options{Targets: targets})
	rows := make([]poolRow, len(reports))
	for k := range reports {
		rp := &reports[k]
		var as *sim.PoolAutoscaleStats
		if res.Autoscale != nil && k < len(res.Autoscale.Pools) {
			as = &res.Autoscale.Pools[k]
		}
		rows[k].name, rows[k].replicas = rp.Pool, int32(rp.Instances)
		for i := range poolDefs {
			rows[k].values[i] = poolDefs[i].get(rp, res.PD, as)
		}
	}
	return rows
}

// poolMetrics is status.metrics.pools: each pool's numbers averaged over the seeds (every seed
// of a disaggregated cluster has both pools).
func (r *Result) poolMetrics() []blisv1alpha1.PoolMetrics {
	if len(r.Seeds) == 0 || len(r.Seeds[0].pools) == 0 {
		return nil
	}
	out := make([]blisv1alpha1.PoolMetrics, len(r.Seeds[0].pools))
	for k := range out {
		row := &r.Seeds[0].pools[k]
		m := &out[k]
		m.Name, m.Replicas = row.name, row.replicas
		for i, d := range poolDefs {
			var xs []float64
			for _, s := range r.Seeds {
				xs = append(xs, s.pools[k].values[i])
			}
			d.set(m, statusNumber(meanOf(xs), d.integer))
		}
	}
	return out
}
