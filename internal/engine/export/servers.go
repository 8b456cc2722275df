package export

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/inference-sim/blis-operator/internal/engine/export/llmd"
	"github.com/inference-sim/blis-operator/internal/engine/model"
	"github.com/inference-sim/blis-operator/internal/engine/policy"
)

// Defaults of the simulator's saturation analyzer (autoscaler block, 0 = default).
const (
	defaultAnalyzerKV        = 0.8
	defaultAnalyzerScaleUp   = 0.8
	defaultAnalyzerScaleDown = 0.4
)

// scheduler maps the instance scheduler and preemption policy to vLLM's scheduling policy.
func (bd *builder) scheduler() error {
	const stage = "scheduler"
	switch bd.b.Scheduler {
	case "", "fcfs":
	case "priority-fcfs":
		bd.priorityArgs = true
	case "sjf":
		if err := bd.approx(stage, "sjf: vLLM has no shortest-job-first scheduling; its default first-come-first-served order is used"); err != nil {
			return err
		}
	case "reverse-priority":
		return refuse(stage, "reverse-priority is a pathological baseline")
	default:
		return fmt.Errorf("export: scheduler %q is not known", bd.b.Scheduler)
	}
	if bd.b.Preemption.Policy == "priority" {
		bd.priorityArgs = true
	}
	if bd.priorityArgs {
		return bd.approx(stage, "vLLM --scheduling-policy=priority orders and preempts by the request's priority field (lower value first); llm-d-router does not set it from the InferenceObjective, so clients must send priority = −(class priority)")
	}
	return nil
}

// infraNotes reports the bundle's simulation-only settings.
func (bd *builder) infraNotes() error {
	b := bd.b
	if len(b.NodePools) > 0 {
		bd.note("node_pools", "node pools and provisioning delays describe the simulated infrastructure; provision nodes with the cluster's own tooling")
	}
	if b.InstanceLifecycle != (policy.InstanceLifecycle{}) {
		bd.note("instance_lifecycle", "loading delays are simulated; real model servers take their own time")
	}
	if b.Observability != nil {
		bd.note("observability", "snapshot staleness is simulated; llm-d's endpoint picker refreshes metrics every --refresh-metrics-interval (50ms by default)")
	}
	for _, p := range bd.pools {
		if p.LatencyModel != "" {
			bd.note("pools", "%s: latencyModel %s sets the simulated step times only; llm-d and vLLM have no counterpart", p.Name, p.LatencyModel)
		}
	}
	if o := bd.in.Cluster.KVOffload; o != nil && (o.BandwidthGBps > 0 || o.BaseLatencyUs > 0 || o.OffloadThreshold != nil) {
		bd.note("kvOffload", "CPU offload bandwidth, latency and threshold are modelled by the simulator; vLLM's OffloadingConnector has no such settings")
	}
	for _, k := range bd.in.Cluster.LowerKVTiers {
		bd.note("kvTiers", "the %s KV tier is simulated but not exported: the llm-d and vLLM configuration written here has no counterpart", k)
	}
	return nil
}

// kvConnector is vLLM's --kv-transfer-config.
type kvConnector struct {
	Connector   string         `json:"kv_connector"`
	Role        string         `json:"kv_role"`
	ExtraConfig map[string]any `json:"kv_connector_extra_config,omitempty"`
}

// modelServers writes the vLLM command line of every pool. A prefill or decode pool with its
// own GPU or engine settings is resolved with them, so its arguments are what its replicas
// simulated; every other pool runs the cluster's engine.
func (bd *builder) modelServers() ([]ModelServer, error) {
	overrides := slices.ContainsFunc(bd.pools, func(p Pool) bool { return p.GPU != "" || p.Engine != nil })
	if bd.engine == nil {
		if bd.priorityArgs || bd.pd || bd.precise || bd.in.Cluster.KVOffload != nil {
			bd.note("model-servers", "no model given: the vLLM arguments the policy needs (scheduling policy, KV connectors, KV events) are not written")
		}
		if overrides {
			bd.note("pools", "no model given: the pools' own GPU and engine settings are not written")
		}
		return nil, nil
	}
	var env []EnvVar
	if bd.precise {
		env = []EnvVar{{Name: "PYTHONHASHSEED", Value: preciseHashSeed},
			{Name: "POD_IP", ValueFrom: &EnvVarSource{FieldRef: &FieldRef{FieldPath: "status.podIP"}}}}
	}
	shared, err := bd.serverArgs(bd.resolved, bd.in.Cluster.Engine.TotalKVBlocks > 0)
	if err != nil {
		return nil, err
	}
	var out []ModelServer
	for _, p := range bd.pools {
		args := shared
		if p.GPU != "" || p.Engine != nil {
			r, settings, err := bd.resolvePool(p)
			if err != nil {
				return nil, err
			}
			if r.Hardware.Name != bd.resolved.Hardware.Name {
				bd.note("pools", "%s: runs on %s GPUs (the cluster's are %s): vLLM has no argument for the accelerator, so schedule the pool's pods on such nodes", p.Name, r.Hardware.Name, bd.resolved.Hardware.Name)
			}
			if args, err = bd.serverArgs(r, settings.TotalKVBlocks > 0); err != nil {
				return nil, err
			}
		}
		labels := map[string]string{"app": bd.opts.Name}
		if p.Role != RoleMonolithic {
			labels["llm-d.ai/role"] = p.Role
		}
		out = append(out, ModelServer{Name: p.Name, Role: p.Role, Replicas: p.Replicas, Labels: labels,
			Command: []string{"vllm", "serve", bd.model}, Args: append([]string(nil), args...), Env: env})
	}
	return out, nil
}

// resolvePool resolves a pool's own instance: the cluster's model (architecture included, so an
// inline one too), the pool's GPU or the cluster's, and the cluster's engine settings with the
// pool's overrides. The latency model does not change engine settings, so the default is used.
func (bd *builder) resolvePool(p Pool) (*model.Resolved, model.EngineSettings, error) {
	c := &bd.in.Cluster
	spec := model.InstanceSpec{Model: c.Model, ModelConfig: bd.resolved.Model, GPU: c.GPU, Engine: p.engineSettings(c.Engine)}
	if p.GPU != "" {
		spec.GPU = p.GPU
	}
	r, err := model.Resolve(spec)
	if err != nil {
		return nil, spec.Engine, fmt.Errorf("export: pool %s: %w", p.Name, err)
	}
	return r, spec.Engine, nil
}

// serverArgs are the vLLM arguments of a replica of the resolved instance r; fixedBlocks writes
// its KV block count, which the settings fixed instead of deriving it from GPU memory.
func (bd *builder) serverArgs(r *model.Resolved, fixedBlocks bool) ([]string, error) {
	e := &r.Engine
	args := []string{
		"--tensor-parallel-size=" + strconv.Itoa(e.TensorParallelSize),
	}
	if e.PipelineParallelSize > 1 {
		args = append(args, "--pipeline-parallel-size="+strconv.Itoa(e.PipelineParallelSize))
	}
	if e.DataParallelSize > 1 {
		args = append(args, "--data-parallel-size="+strconv.Itoa(e.DataParallelSize))
	}
	args = append(args,
		"--max-num-seqs="+strconv.FormatInt(e.MaxNumSeqs, 10),
		"--max-num-batched-tokens="+strconv.FormatInt(e.MaxNumBatchedTokens, 10),
		"--block-size="+strconv.FormatInt(e.BlockSize, 10),
		"--max-model-len="+strconv.FormatInt(e.MaxModelLen, 10),
		"--gpu-memory-utilization="+strconv.FormatFloat(e.GPUMemoryUtilization, 'g', -1, 64),
	)
	if fixedBlocks {
		args = append(args, "--num-gpu-blocks-override="+strconv.FormatInt(e.TotalKVBlocks, 10))
	}
	if e.LongPrefillTokenThreshold > 0 {
		args = append(args, "--long-prefill-token-threshold="+strconv.FormatInt(e.LongPrefillTokenThreshold, 10))
	}
	args = append(args, map[bool]string{true: "--enable-prefix-caching", false: "--no-enable-prefix-caching"}[e.EnablePrefixCaching])
	args = append(args, map[bool]string{true: "--enable-chunked-prefill", false: "--no-enable-chunked-prefill"}[e.EnableChunkedPrefill])
	if bd.priorityArgs {
		args = append(args, "--scheduling-policy=priority")
	}
	var connectors []kvConnector
	if bd.pd {
		connectors = append(connectors, kvConnector{Connector: "NixlConnector", Role: "kv_both"})
	}
	if o := bd.in.Cluster.KVOffload; o != nil {
		bytes, err := offloadBytes(r, o.CPUBlocks)
		if err != nil {
			return nil, err
		}
		connectors = append(connectors, kvConnector{Connector: "OffloadingConnector", Role: "kv_both",
			ExtraConfig: map[string]any{"cpu_bytes_to_use": bytes}})
	}
	switch len(connectors) {
	case 1:
		args = append(args, "--kv-transfer-config="+mustJSON(connectors[0]))
	case 2:
		args = append(args, "--kv-transfer-config="+mustJSON(kvConnector{Connector: "MultiConnector", Role: "kv_both",
			ExtraConfig: map[string]any{"connectors": connectors}}))
	}
	if bd.precise {
		port := strconv.Itoa(int(bd.opts.TargetPort))
		args = append(args, "--kv-events-config="+mustJSON(struct {
			Enable    bool   `json:"enable_kv_cache_events"`
			Publisher string `json:"publisher"`
			Endpoint  string `json:"endpoint"`
			Topic     string `json:"topic"`
		}{true, "zmq", "tcp://*:5556", "kv@$(POD_IP):" + port + "@" + bd.model}))
	}
	return args, nil
}

// offloadBytes is the CPU memory of blocks KV blocks of the resolved instance r.
func offloadBytes(r *model.Resolved, blocks int64) (int64, error) {
	perBlock := r.Model.KVCacheBytesPerTokenPerGPU(r.Engine.TensorParallelSize) * float64(r.Engine.BlockSize) * float64(r.Engine.TensorParallelSize)
	total := perBlock * float64(blocks)
	if !(total > 0) || total > math.MaxInt64/2 {
		return 0, fmt.Errorf("export: kvOffload: %d blocks of %g bytes is not a valid size", blocks, perBlock)
	}
	return int64(total), nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs and maps of numbers and strings are marshalled
	}
	return string(b)
}

// scaledObjects maps the autoscaler to one KEDA ScaledObject per pool, scaling on the pool
// saturation the endpoint picker exports (its saturation detector's formula is the one the
// simulator's analyzer and gaie-legacy use).
func (bd *builder) scaledObjects() ([]llmd.ScaledObject, error) {
	const stage = "autoscaler"
	a := bd.b.Autoscaler
	if a.IntervalUs <= 0 {
		return nil, nil
	}
	if err := bd.needsV09(stage, "autoscaling on the endpoint picker's pool-saturation metric"); err != nil {
		return nil, err
	}
	kv := firstPositive(a.Analyzer.KVCacheThreshold, defaultAnalyzerKV)
	up := firstPositive(a.Analyzer.ScaleUpThreshold, defaultAnalyzerScaleUp)
	down := firstPositive(a.Analyzer.ScaleDownBoundary, defaultAnalyzerScaleDown)
	if err := bd.approx(stage, "the simulator scales one replica at a time when saturation crosses %g (up) or %g (down); the HPA scales proportionally towards saturation %g (one pod per polling interval) and has no separate scale-down boundary", up, down, up); err != nil {
		return nil, err
	}
	detKV := policy.DefaultSaturationKVThreshold
	if bd.detector != nil && bd.detector.Type == "utilization-detector" {
		if p, ok := bd.detector.Parameters.(*llmd.UtilizationDetectorParams); ok && p.KVCacheUtilThreshold != nil {
			detKV = *p.KVCacheUtilThreshold
		}
	}
	if kv != detKV {
		if err := bd.approx(stage, "the analyzer's kv_cache_threshold %g differs from the saturation detector's kvCacheUtilThreshold %g, which defines the exported saturation metric", kv, detKV); err != nil {
			return nil, err
		}
	}
	if a.HPAScrapeDelay != (policy.DelaySpec{}) {
		bd.note(stage, "the metrics scrape delay is simulated; in the cluster it is Prometheus' scrape interval")
	}
	poll := int32(max(1, math.Round(a.IntervalUs/1e6)))
	// Windows are always written: an unset HPA scale-down window would be Kubernetes' five
	// minutes, while a bundle's 0 means none.
	secs := func(us float64) *int32 { return ptr(int32(math.Round(us / 1e6))) }
	var out []llmd.ScaledObject
	for _, p := range bd.pools {
		lo, hi, ok := bd.bounds(p)
		if !ok {
			return nil, fmt.Errorf("export: autoscaler: pool %q has no replica bounds (set pools[].minReplicas and maxReplicas, or autoscaling)", p.Name)
		}
		out = append(out, llmd.ScaledObject{
			APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject",
			Metadata: llmd.ObjectMeta{Name: p.Name, Namespace: bd.opts.Namespace},
			Spec: llmd.ScaledObjectSpec{
				ScaleTargetRef:  llmd.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: p.Name},
				MinReplicaCount: ptr(lo), MaxReplicaCount: ptr(hi), PollingInterval: ptr(poll),
				Advanced: &llmd.Advanced{HorizontalPodAutoscalerConfig: &llmd.HPAConfig{Behavior: &llmd.HPABehavior{
					ScaleUp:   &llmd.HPAScalingRules{StabilizationWindowSeconds: secs(a.ScaleUpStabilizationWindowUs), Policies: []llmd.HPAScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: poll}}},
					ScaleDown: &llmd.HPAScalingRules{StabilizationWindowSeconds: secs(a.ScaleDownStabilizationWindowUs), Policies: []llmd.HPAScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: poll}}},
				}}},
				Triggers: []llmd.Trigger{{Type: "prometheus", Name: "pool-saturation", MetricType: "Value", Metadata: map[string]string{
					"serverAddress": bd.opts.PrometheusAddress,
					"query":         fmt.Sprintf(`max(llm_d_epp_flow_control_pool_saturation{inference_pool=%q})`, bd.opts.Name),
					"threshold":     strconv.FormatFloat(up, 'g', -1, 64),
				}}},
			},
		})
	}
	return out, nil
}

// bounds returns a pool's autoscaling bounds.
func (bd *builder) bounds(p Pool) (int32, int32, bool) {
	if p.MinReplicas != nil && p.MaxReplicas != nil {
		return *p.MinReplicas, *p.MaxReplicas, true
	}
	if a := bd.in.Cluster.Autoscaling; a != nil {
		return a.MinReplicas, a.MaxReplicas, true
	}
	return 0, 0, false
}

func firstPositive(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

// inferencePool writes the InferencePool selecting the model servers by their app label.
func (bd *builder) inferencePool() *llmd.InferencePool {
	return &llmd.InferencePool{
		APIVersion: "inference.networking.k8s.io/v1", Kind: "InferencePool",
		Metadata: llmd.ObjectMeta{Name: bd.opts.Name, Namespace: bd.opts.Namespace},
		Spec: llmd.InferencePoolSpec{
			Selector:    llmd.LabelSelector{MatchLabels: map[string]string{"app": bd.opts.Name}},
			TargetPorts: []llmd.Port{{Number: bd.opts.TargetPort}},
			EndpointPickerRef: llmd.EndpointPickerRef{Kind: "Service", Name: bd.opts.Name + "-epp",
				Port: &llmd.Port{Number: EPPPort}, FailureMode: "FailClose"},
		},
	}
}
