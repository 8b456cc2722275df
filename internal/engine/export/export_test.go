package export

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const llama = "meta-llama/llama-3.1-8b-instruct"

type goldenCase struct {
	name    string
	bundle  string // inline YAML, or "file:<path>"
	cluster Cluster
	opts    Options
}

func bounds(lo, hi int32) (*int32, *int32) { return &lo, &hi }

func goldenCases() []goldenCase {
	mono := Cluster{Model: llama, Pools: []Pool{{Name: "vllm", Replicas: 4}}}
	pd := func(decider string, thr int64) Cluster {
		return Cluster{Model: llama, Pools: []Pool{{Name: "prefill", Role: RolePrefill, Replicas: 2}, {Name: "decode", Role: RoleDecode, Replicas: 4}},
			Disaggregation: &Disaggregation{Decider: decider, Threshold: thr, TransferBandwidthGBps: 25}}
	}
	lo, hi := bounds(2, 8)
	return []goldenCase{
		{name: "llm-d-default", bundle: "routing: {policy: weighted}\n", cluster: mono},
		{name: "blis-policy-config", bundle: "file:../policy/testdata/blis/policy-config.yaml", cluster: mono},
		{name: "blis-weighted-routing", bundle: "file:../policy/testdata/blis/weighted-routing.yaml", cluster: mono},
		{name: "blis-epp-estimate-prefix", bundle: "file:../policy/testdata/blis/epp-estimate-prefix.yaml", cluster: mono},
		{name: "least-loaded-queue", bundle: "routing: {policy: least-loaded, params: {signal: queue-depth}}\n", cluster: mono},
		{name: "least-loaded-effective", bundle: "routing: {policy: least-loaded}\n", cluster: mono},
		{name: "prefix-affinity", bundle: "routing:\n  policy: prefix-affinity\n  params: {prefix_weight: 4, queue_weight: 1.5, picker: weighted-random}\n  prefix_cache: {maxPrefixTokensToMatch: 16384, lruCapacityPerServer: 31250}\n", cluster: mono},
		{name: "cel-linear", bundle: "routing:\n  cel: \"2.0 * score.queue + 2.0 * score.kvCacheUtilization + 3.0 * (score.prefixCache - 0.5 * score.loadAware)\"\n", cluster: mono},
		{name: "scorer-params", bundle: "routing:\n  policy: weighted\n  scorers:\n    - {name: prefix-cache-scorer, weight: 3, params: {matchLengthWeight: 0.25}}\n    - {name: load-aware-scorer, weight: 1, params: {threshold: 64}}\n    - {name: token-load, weight: 0.5}\n    - {name: no-hit-lru-scorer, weight: 0.25, params: {lruSize: 256}}\n", cluster: mono},
		{name: "gaie-legacy", bundle: "admission: {policy: gaie-legacy, gaie_qd_threshold: 8, gaie_kv_threshold: 0.9}\npriority: {policy: slo-based}\nrouting: {policy: weighted}\n", cluster: Cluster{Model: llama, SLOClasses: []string{"critical", "standard", "batch"}}},
		{name: "always-admit-sheddable", bundle: "priority: {policy: slo-based}\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "tier-shed", bundle: "admission: {policy: tier-shed, tier_shed_threshold: 20, tier_shed_min_priority: 3}\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "token-bucket", bundle: "admission: {policy: token-bucket, token_bucket_capacity: 50000, token_bucket_refill_rate: 2000}\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "rate-limit", bundle: "admission: {policy: rate-limit, params: {rate: 50, window_us: 2000000}}\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "tenant-quota", bundle: "admission: {policy: tenant-quota, params: {capacity: 128}}\ntenant_budgets: {a: 0.5}\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "tenant-priority", bundle: "priority: {policy: tenant-priority, params: {tenant_scores: {gold: 10, bronze: -1}}}\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "deadline-aware", bundle: "priority: {policy: deadline-aware}\nadmission: {slo_targets: {critical: 200000, batch: 5000000}}\nrouting: {policy: weighted}\n", cluster: Cluster{Model: llama, SLOClasses: []string{"critical", "batch"}}},
		{name: "scheduler-priority", bundle: "priority: {policy: slo-based}\nscheduler: priority-fcfs\npreemption: {policy: priority}\nrouting: {policy: weighted}\n", cluster: Cluster{Model: llama, SLOClasses: []string{"critical", "standard"}}},
		{name: "scheduler-sjf", bundle: "scheduler: sjf\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "pd-prefix-threshold", bundle: "routing: {policy: weighted, scorers: [{name: prefix-cache-scorer, weight: 2}, {name: queue-scorer, weight: 1}]}\n", cluster: pd(DeciderPrefixThreshold, 15)},
		{name: "pd-prompt-length", bundle: "routing: {policy: weighted}\n", cluster: pd(DeciderPromptLength, 1023)},
		{name: "pd-always", bundle: "routing: {policy: weighted}\n", cluster: pd(DeciderAlways, 0)},
		{name: "pd-never", bundle: "routing: {policy: weighted}\n", cluster: pd(DeciderNever, 0)},
		{name: "pd-pool-hardware", bundle: "routing: {policy: weighted}\n", cluster: pdPoolHardware()},
		{name: "kv-offload", bundle: "routing: {policy: weighted}\n", cluster: Cluster{Model: llama, Engine: mustEngine(), KVOffload: &KVOffload{CPUBlocks: 50000, BandwidthGBps: 32}}},
		{name: "autoscaler", bundle: "routing: {policy: weighted}\nautoscaler:\n  interval_us: 15000000\n  scale_up_stabilization_window_us: 30000000\n  scale_down_stabilization_window_us: 300000000\n  analyzer: {scale_up_threshold: 0.85, scale_down_boundary: 0.5}\n",
			cluster: Cluster{Model: llama, Pools: []Pool{{Name: "vllm", Replicas: 4, MinReplicas: lo, MaxReplicas: hi}}}, opts: Options{InferencePool: true, Namespace: "inference"}},
		{name: "no-model", bundle: "routing: {policy: weighted}\nscheduler: priority-fcfs\n"},
		// Templates with no llm-d equivalent: the golden file holds the refusal.
		{name: "refused-always-busiest", bundle: "routing: {policy: always-busiest}\n", cluster: mono},
		{name: "refused-reject-all", bundle: "admission: {policy: reject-all}\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "refused-inverted-slo", bundle: "priority: {policy: inverted-slo}\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "refused-reverse-priority", bundle: "scheduler: reverse-priority\nrouting: {policy: weighted}\n", cluster: mono},
		{name: "refused-routing-tree", bundle: "routing:\n  tree:\n    if: {observable: instance.queueDepth, op: \"<\", value: 4}\n    then: {score: 1}\n    else: {score: 0}\n", cluster: mono},
		{name: "refused-admission-cel", bundle: "admission: {cel: \"global.saturation < 1.0 || request.sloClass != 'batch'\"}\nrouting: {policy: weighted}\n", cluster: mono},
	}
}

const llama70 = "llama-3.1-70b-instruct"

// pdPoolHardware is a P/D cluster of a 70B model whose pools run their own hardware: TP8
// prefill replicas with a larger step budget and their own latency model, and TP4 decode
// replicas on A100-80 GPUs with more sequences and their own memory fraction. The cluster
// fixes its KV blocks, which the decode pool's memory fraction replaces.
func pdPoolHardware() Cluster {
	return Cluster{Model: llama70, GPU: "H100", Engine: model.EngineSettings{TensorParallelSize: 4, MaxNumSeqs: 128, TotalKVBlocks: 20000},
		Pools: []Pool{
			{Name: "prefill", Role: RolePrefill, Replicas: 2, Engine: &PoolEngine{TensorParallelSize: 8, MaxNumBatchedTokens: 32768}, LatencyModel: "roofline"},
			{Name: "decode", Role: RoleDecode, Replicas: 4, GPU: "A100-80", Engine: &PoolEngine{MaxNumSeqs: 256, GPUMemoryUtilization: 0.95}},
		},
		Disaggregation: &Disaggregation{Decider: DeciderPrefixThreshold, Threshold: 256, TransferBandwidthGBps: 25}}
}

func mustEngine() (e model.EngineSettings) {
	e.MaxNumSeqs = 128
	e.MaxNumBatchedTokens = 8192
	e.BlockSize = 64
	e.MaxModelLen = 8192
	f := false
	e.EnableChunkedPrefill = &f
	return e
}

func loadBundle(t *testing.T, src string) *policy.Bundle {
	t.Helper()
	if path, ok := strings.CutPrefix(src, "file:"); ok {
		b, err := policy.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b, err := policy.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func render(res *Result, err error) []byte {
	if err != nil {
		return []byte("error: " + err.Error() + "\n")
	}
	var buf bytes.Buffer
	for _, f := range res.Files() {
		fmt.Fprintf(&buf, "=== %s ===\n", f.Name)
		buf.Write(f.Content)
	}
	return buf.Bytes()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update to accept):\n%s", path, got)
	}
}

// Every template mapping, on every target, against golden files; each successful export's
// EndpointPickerConfig is decoded strictly and validated again here.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		for _, target := range llmd.TargetNames() {
			t.Run(c.name+"/"+target, func(t *testing.T) {
				opts := c.opts
				opts.Target = target
				res, err := Export(Input{Bundle: loadBundle(t, c.bundle), Cluster: c.cluster}, opts)
				if err == nil {
					cfg, derr := llmd.Decode(res.File(FileEPPConfig))
					if derr != nil {
						t.Fatalf("exported config does not decode: %v", derr)
					}
					if _, verr := llmd.Validate(cfg, res.Target, llmd.ValidateOptions{}); verr != nil {
						t.Fatalf("exported config does not validate: %v", verr)
					}
					if cfg.APIVersion != res.Target.APIVersion {
						t.Fatalf("apiVersion %s, want %s", cfg.APIVersion, res.Target.APIVersion)
					}
				} else if !errors.Is(err, errRefused) && !strings.Contains(err.Error(), "needs target") {
					t.Fatalf("unexpected error kind: %v", err)
				}
				checkGolden(t, c.name+"__"+target, render(res, err))
			})
		}
	}
}

func TestExportDeterministic(t *testing.T) {
	for _, c := range goldenCases() {
		in := Input{Bundle: loadBundle(t, c.bundle), Cluster: c.cluster}
		a, errA := Export(in, c.opts)
		b, errB := Export(in, c.opts)
		if !bytes.Equal(render(a, errA), render(b, errB)) {
			t.Fatalf("%s: two exports differ", c.name)
		}
	}
}

func TestExportRefusesWhatHasNoEquivalent(t *testing.T) {
	cases := map[string]string{
		"routing tree":      "routing:\n  tree: {score: 1}\n",
		"nonlinear cel":     "routing: {cel: \"instance.queueDepth > 3 ? 0.0 : 1.0\"}\n",
		"cel product":       "routing: {cel: \"score.queue * score.prefixCache\"}\n",
		"always-busiest":    "routing: {policy: always-busiest}\n",
		"reject-all":        "admission: {policy: reject-all}\nrouting: {policy: weighted}\n",
		"admission cel":     "admission: {cel: \"request.inputTokens < 1000\"}\nrouting: {policy: weighted}\n",
		"inverted-slo":      "priority: {policy: inverted-slo}\nrouting: {policy: weighted}\n",
		"priority cel":      "priority: {cel: \"double(request.inputTokens)\"}\nrouting: {policy: weighted}\n",
		"reverse-priority":  "scheduler: reverse-priority\nrouting: {policy: weighted}\n",
		"admission tree":    "admission:\n  tree: {action: admit}\nrouting: {policy: weighted}\n",
		"priority tree":     "priority:\n  tree: {score: 2}\nrouting: {policy: weighted}\n",
		"cel unknown field": "routing: {cel: \"2.0 * instance.kvUtilization\"}\n",
	}
	for name, doc := range cases {
		_, err := Export(Input{Bundle: loadBundle(t, doc)}, Options{})
		if !errors.Is(err, errRefused) {
			t.Errorf("%s: want a refusal, got %v", name, err)
		}
	}
}

func TestExportErrors(t *testing.T) {
	b := loadBundle(t, "routing: {policy: weighted}\n")
	_, err := Export(Input{Bundle: b}, Options{Target: "llm-d-v0.7"})
	if err == nil || !strings.Contains(err.Error(), "supported: llm-d-v0.8, llm-d-v0.9, llm-d-v0.10, llm-d-v1") {
		t.Fatalf("unsupported target: %v", err)
	}
	_, err = Export(Input{Bundle: loadBundle(t, "routing: {policy: round-robin}\n")}, Options{Strict: true})
	if err == nil || !strings.Contains(err.Error(), "strict") {
		t.Fatalf("strict mode accepted an approximation: %v", err)
	}
	_, err = Export(Input{Bundle: loadBundle(t, "routing: {policy: weighted}\nautoscaler: {interval_us: 1000000}\n"), Cluster: Cluster{Model: llama}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "replica bounds") {
		t.Fatalf("autoscaler without bounds: %v", err)
	}
	_, err = Export(Input{Bundle: b, Cluster: Cluster{Pools: []Pool{{Name: "p", Role: RolePrefill, Replicas: 1}}}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "prefill pool and one decode pool") {
		t.Fatalf("prefill without decode: %v", err)
	}
	_, err = Export(Input{Bundle: b, Cluster: Cluster{Model: "no-such-model"}}, Options{})
	if err == nil {
		t.Fatal("unknown model accepted")
	}
	// Warnings are reported, never dropped: round-robin's approximation is in the result and
	// in the warnings file.
	res, err := Export(Input{Bundle: loadBundle(t, "routing: {policy: round-robin}\n")}, Options{})
	if err != nil || len(res.Warnings) == 0 || !strings.Contains(string(res.File(FileWarnings)), "random-picker") {
		t.Fatalf("round-robin warning missing: %v %v", res, err)
	}
}

func TestLinearCEL(t *testing.T) {
	specs, c, err := linearCEL("1 + 2*score.queue - (score.kvCacheUtilization/4 - 3*instance.prefixMatch) + score.prefixCache*0.5 + -score.tokenLoad")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(specs, c)
	want := "[{queue-scorer 2 map[]} {kv-cache-utilization-scorer -0.25 map[]} {prefix-cache-scorer 3.5 map[]} {token-load-scorer -1 map[]}] 1"
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	for _, bad := range []string{"score.queue > 1 ? 1.0 : 0.0", "math.greatest(score.queue, 1.0)", "score.queue / score.kvCacheUtilization", "(score.queue", "double(score.queue)"} {
		if _, _, err := linearCEL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestExportNamesAndObjectives(t *testing.T) {
	// Two prefix-cache-scorer plugins (approximate and precise) get distinct names.
	b := loadBundle(t, "routing: {policy: weighted, scorers: [{name: prefix-affinity, weight: 1}, {name: precise-prefix-cache, weight: 2}]}\n")
	res, err := Export(Input{Bundle: b, Cluster: Cluster{Model: llama}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, pp := range res.Config.SchedulingProfiles[0].Plugins {
		refs = append(refs, pp.PluginRef)
	}
	if got := strings.Join(refs, ","); got != "decode-filter,prefix-cache-scorer,prefix-cache-scorer-2,max-score-picker" {
		t.Fatalf("profile refs: %s", got)
	}
	// Tenant names become object names, with a note; two names that collide are an error.
	b = loadBundle(t, "priority: {policy: tenant-priority, params: {tenant_scores: {Team_A: 2, b: 1}}}\nrouting: {policy: weighted}\n")
	res, err = Export(Input{Bundle: b}, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objectives) != 2 || res.Objectives[0].Metadata.Name != "b" || res.Objectives[1].Metadata.Name != "team-a" ||
		*res.Objectives[1].Spec.Priority != 2 || res.Objectives[1].Metadata.Namespace != "ns" {
		t.Fatalf("objectives: %+v", res.Objectives)
	}
	if !strings.Contains(string(res.File(FileWarnings)), `"Team_A" is written as InferenceObjective "team-a"`) {
		t.Fatalf("rename not reported:\n%s", res.File(FileWarnings))
	}
	b = loadBundle(t, "priority: {policy: tenant-priority, params: {tenant_scores: {Team_A: 2, team-a: 1}}}\nrouting: {policy: weighted}\n")
	if _, err := Export(Input{Bundle: b}, Options{}); err == nil || !strings.Contains(err.Error(), "same object name") {
		t.Fatalf("colliding names: %v", err)
	}
	// Non-integer class priorities are rounded with a warning, or refused in strict mode.
	b = loadBundle(t, "priority: {policy: slo-based, params: {class_scores: {gold: 2.5}}}\nrouting: {policy: weighted}\n")
	res, err = Export(Input{Bundle: b, Cluster: Cluster{SLOClasses: []string{"gold"}}}, Options{})
	if err != nil || *res.Objectives[0].Spec.Priority != 3 || !strings.Contains(string(res.File(FileWarnings)), "rounded") {
		t.Fatalf("rounding: %v %v", res, err)
	}
	if _, err := Export(Input{Bundle: b, Cluster: Cluster{SLOClasses: []string{"gold"}}}, Options{Strict: true}); err == nil {
		t.Fatal("strict mode accepted a rounded priority")
	}
}

// A bundle's zero stabilisation window is written as 0, not left to Kubernetes' default of
// five minutes for scale-down.
func TestScaledObjectZeroWindows(t *testing.T) {
	b := loadBundle(t, "routing: {policy: weighted}\nautoscaler: {interval_us: 1000000}\n")
	lo, hi := bounds(1, 3)
	res, err := Export(Input{Bundle: b, Cluster: Cluster{Pools: []Pool{{Name: "x", Replicas: 1, MinReplicas: lo, MaxReplicas: hi}}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(res.File(FileScaledObjects)), "stabilizationWindowSeconds: 0"); n != 2 {
		t.Fatalf("%d zero windows, want 2:\n%s", n, res.File(FileScaledObjects))
	}
}

// An export whose configuration holds an Alpha plugin is refused unless experimental plugins
// are allowed, and then says in the file that the endpoint picker needs the flag.
func TestRenderAlphaPlugins(t *testing.T) {
	target, err := llmd.LookupTarget("")
	if err != nil {
		t.Fatal(err)
	}
	build := func() (*builder, *Result) {
		bd := &builder{t: target, b: &policy.Bundle{}, names: map[string]int{}}
		bd.cfg = llmd.EndpointPickerConfig{APIVersion: target.APIVersion, Kind: llmd.KindEndpointPickerConfig}
		bd.addPlugin("session-affinity-scorer", nil)
		bd.addPlugin("max-score-picker", nil)
		bd.cfg.SchedulingProfiles = []llmd.SchedulingProfile{{Name: "default", Plugins: []llmd.ProfilePlugin{
			{PluginRef: "session-affinity-scorer", Weight: ptr(1.0)}, {PluginRef: "max-score-picker"}}}}
		return bd, &Result{Target: target, Config: &bd.cfg}
	}
	bd, res := build()
	err = res.render(bd, Options{})
	if !errors.Is(err, llmd.ErrExperimental) || !strings.Contains(err.Error(), "session-affinity-scorer") || !strings.Contains(err.Error(), "--allow-experimental-plugins") {
		t.Fatalf("want the Alpha plugin and the flag named, got %v", err)
	}
	bd, res = build()
	if err := res.render(bd, Options{AllowExperimental: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.File(FileEPPConfig)), "run the endpoint picker with --allow-experimental-plugins") {
		t.Fatalf("header does not name the flag:\n%s", res.File(FileEPPConfig))
	}
}

// argsOf returns the vLLM arguments of the named model-server pool.
func argsOf(t *testing.T, res *Result, pool string) string {
	t.Helper()
	for _, m := range res.ModelServers {
		if m.Name == pool {
			return strings.Join(m.Args, " ")
		}
	}
	t.Fatalf("no model server %q in %+v", pool, res.ModelServers)
	return ""
}

// Each P/D pool's vLLM arguments follow its own engine settings, defaulting to the cluster's;
// its GPU and latency model, which vLLM has no argument for, are notes.
func TestExportPoolHardware(t *testing.T) {
	res, err := Export(Input{Bundle: loadBundle(t, "routing: {policy: weighted}\n"), Cluster: pdPoolHardware()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	prefill, decode := argsOf(t, res, "prefill"), argsOf(t, res, "decode")
	for _, want := range []string{"--tensor-parallel-size=8", "--max-num-seqs=128", "--max-num-batched-tokens=32768", "--num-gpu-blocks-override=20000", "--gpu-memory-utilization=0.9 "} {
		if !strings.Contains(prefill+" ", want) {
			t.Errorf("prefill lacks %s: %s", want, prefill)
		}
	}
	for _, want := range []string{"--tensor-parallel-size=4", "--max-num-seqs=256", "--max-num-batched-tokens=2048", "--gpu-memory-utilization=0.95"} {
		if !strings.Contains(decode, want) {
			t.Errorf("decode lacks %s: %s", want, decode)
		}
	}
	if strings.Contains(decode, "--num-gpu-blocks-override") {
		t.Errorf("decode's memory fraction replaces the cluster's fixed KV blocks: %s", decode)
	}
	if res.ModelServers[0].Replicas != 2 || res.ModelServers[1].Replicas != 4 {
		t.Errorf("replicas %d and %d, want 2 and 4", res.ModelServers[0].Replicas, res.ModelServers[1].Replicas)
	}
	warnings := string(res.File(FileWarnings))
	for _, want := range []string{"pools (note): prefill: latencyModel roofline sets the simulated step times only",
		"pools (note): decode: runs on A100-80 GPUs (the cluster's are H100)"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}

	// Without overrides both pools run the cluster's engine.
	c := pdPoolHardware()
	for i := range c.Pools {
		c.Pools[i].GPU, c.Pools[i].Engine, c.Pools[i].LatencyModel = "", nil, ""
	}
	res, err = Export(Input{Bundle: loadBundle(t, "routing: {policy: weighted}\n"), Cluster: c}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p, d := argsOf(t, res, "prefill"), argsOf(t, res, "decode"); p != d || !strings.Contains(p, "--tensor-parallel-size=4") {
		t.Fatalf("pools without overrides differ or are not the cluster's:\n%s\n%s", p, d)
	}
	if strings.Contains(string(res.File(FileWarnings)), "pools") {
		t.Fatalf("notes about pools without overrides:\n%s", res.File(FileWarnings))
	}
}

func TestPoolOverridesValidated(t *testing.T) {
	b := loadBundle(t, "routing: {policy: weighted}\n")
	for name, tc := range map[string]struct {
		pool Pool
		want string
	}{
		"monolithic":   {Pool{Name: "m", Replicas: 1, GPU: "H100"}, "apply only to prefill and decode pools"},
		"both sizes":   {Pool{Name: "d", Role: RoleDecode, Replicas: 1, Engine: &PoolEngine{GPUMemoryUtilization: 0.8, TotalKVBlocks: 100}}, "not both"},
		"memory > 1":   {Pool{Name: "d", Role: RoleDecode, Replicas: 1, Engine: &PoolEngine{GPUMemoryUtilization: 1.5}}, "gpuMemoryUtilization must be in (0, 1]"},
		"negative tp":  {Pool{Name: "d", Role: RoleDecode, Replicas: 1, Engine: &PoolEngine{TensorParallelSize: -1}}, "must be >= 0"},
		"latency kind": {Pool{Name: "d", Role: RoleDecode, Replicas: 1, LatencyModel: "linear"}, `latencyModel "linear"`},
		"bad tp":       {Pool{Name: "d", Role: RoleDecode, Replicas: 1, Engine: &PoolEngine{TensorParallelSize: 3}}, "pool d: instance: tensor-parallel-size 3"},
	} {
		pools := []Pool{tc.pool}
		if tc.pool.Role == RoleDecode {
			pools = append(pools, Pool{Name: "p", Role: RolePrefill, Replicas: 1})
		}
		_, err := Export(Input{Bundle: b, Cluster: Cluster{Model: llama, Pools: pools}}, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error with %q, got %v", name, tc.want, err)
		}
	}
	// Without a model nothing is resolved, and the note says the pools' settings are not written.
	res, err := Export(Input{Bundle: b, Cluster: Cluster{Pools: []Pool{{Name: "p", Role: RolePrefill, Replicas: 1, Engine: &PoolEngine{TensorParallelSize: 8}},
		{Name: "d", Role: RoleDecode, Replicas: 1}}}}, Options{})
	if err != nil || !strings.Contains(string(res.File(FileWarnings)), "the pools' own GPU and engine settings are not written") {
		t.Fatalf("no model: %v %v", res, err)
	}
}

// The cluster file carries the pools' overrides, and ClusterYAML writes them back.
func TestParseClusterPoolOverrides(t *testing.T) {
	c, err := ParseCluster([]byte(`model: meta-llama/llama-3.3-70b-instruct
pools:
- {name: p, role: prefill, replicas: 2, gpu: H100, engine: {tensorParallelSize: 8, maxNumBatchedTokens: 32768}, latencyModel: roofline}
- {name: d, role: decode, replicas: 4, engine: {maxNumSeqs: 256, gpuMemoryUtilization: 0.95}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Pools[0]; p.GPU != "H100" || *p.Engine != (PoolEngine{TensorParallelSize: 8, MaxNumBatchedTokens: 32768}) || p.LatencyModel != "roofline" {
		t.Fatalf("prefill pool %+v", p)
	}
	if d := c.Pools[1]; *d.Engine != (PoolEngine{MaxNumSeqs: 256, GPUMemoryUtilization: 0.95}) {
		t.Fatalf("decode pool %+v", d)
	}
	out, err := ClusterYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCluster(out)
	if err != nil || *back.Pools[0].Engine != *c.Pools[0].Engine || back.Pools[0].LatencyModel != "roofline" {
		t.Fatalf("round trip: %+v %v\n%s", back, err, out)
	}
	if _, err := ParseCluster([]byte("pools: [{name: d, role: decode, replicas: 1, engine: {blockSize: 32}}, {name: p, role: prefill, replicas: 1}]\n")); err == nil {
		t.Fatal("a pool's block size accepted (it stays the cluster's)")
	}
}
