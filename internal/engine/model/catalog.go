package model

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Sources names files that replace the embedded BLIS data; an empty field keeps the embedded
// file. They mirror BLIS's --model-config-folder, --hardware-config and --defaults-filepath.
type Sources struct {
	// ModelConfigDir is a folder holding either one model's config.json (BLIS's
	// --model-config-folder: used for whichever model is requested) or one sub-folder per
	// model, each with a config.json (the layout of BLIS's model_configs/).
	ModelConfigDir string `json:"modelConfigDir,omitempty"`
	// HardwareConfigPath is a hardware_config.json.
	HardwareConfigPath string `json:"hardwareConfigPath,omitempty"`
	// DefaultsPath is a defaults.yaml with the `defaults:` section and the
	// trained_physics_coefficients; if it also has `models:` rows they are the blackbox rows.
	DefaultsPath string `json:"defaultsPath,omitempty"`
	// BlackboxCoefficientsPath is a defaults.yaml whose `models:` rows (and `defaults:`
	// vllm_version entries) give the blackbox coefficients.
	BlackboxCoefficientsPath string `json:"blackboxCoefficientsPath,omitempty"`
}

// Entry is one model the catalog knows: a BLIS model id from defaults.yaml, a config
// folder, or both.
type Entry struct {
	// ID is the BLIS model id (lower case, e.g. "meta-llama/llama-3.1-8b-instruct"); empty for
	// a config folder with no defaults entry.
	ID string
	// Folder is the config folder name (e.g. "llama-3.1-8b-instruct"); empty when the catalog
	// has no config.json for the model.
	Folder string
	// HFRepo is the Hugging Face repository from defaults.yaml.
	HFRepo string
	// DefaultGPU is the GPU from defaults.yaml ("" when none).
	DefaultGPU string
	// DefaultTP is the TP degree from defaults.yaml (0 when none).
	DefaultTP int
}

// Name is the entry's preferred name: its id, else its folder.
func (e Entry) Name() string {
	if e.ID != "" {
		return e.ID
	}
	return e.Folder
}

// Catalog is the resolved set of models, GPUs and coefficients. It is read-only once loaded
// and safe for concurrent use.
type Catalog struct {
	hardware       *HardwareCatalog
	defaults       map[string]Defaults // lower-case id → defaults
	blackboxDefs   map[string]Defaults // lower-case id → defaults of the blackbox file
	rows           []BlackboxRow
	trainedPhysics *Coefficients
	configs        map[string][]byte // lower-case folder → config.json bytes
	single         []byte            // config.json of a single-model --model-config-folder
	singlePath     string
	entries        []Entry
}

var (
	defaultCatalogOnce sync.Once
	defaultCatalog     *Catalog
	errDefaultCatalog  error
)

// DefaultCatalog returns the catalog of the embedded BLIS data (loaded once).
func DefaultCatalog() (*Catalog, error) {
	defaultCatalogOnce.Do(func() { defaultCatalog, errDefaultCatalog = LoadCatalog(Sources{}) })
	return defaultCatalog, errDefaultCatalog
}

// LoadCatalog builds a catalog from the embedded data with the files named in src replacing
// their embedded counterparts.
func LoadCatalog(src Sources) (*Catalog, error) {
	read := func(override, embeddedPath string) ([]byte, error) {
		if override != "" {
			return os.ReadFile(override)
		}
		return embedded.ReadFile(embeddedPath)
	}
	c := &Catalog{configs: map[string][]byte{}}

	hwData, err := read(src.HardwareConfigPath, embeddedHardware)
	if err != nil {
		return nil, fmt.Errorf("hardware config: %w", err)
	}
	if c.hardware, err = ParseHardwareConfig(hwData); err != nil {
		return nil, err
	}

	defData, err := read(src.DefaultsPath, embeddedDefaults)
	if err != nil {
		return nil, fmt.Errorf("defaults file: %w", err)
	}
	defs, err := ParseDefaults(defData)
	if err != nil {
		return nil, err
	}
	c.defaults = lowerKeys(defs.Defaults)
	c.trainedPhysics = defs.TrainedPhysics

	if len(defs.Models) > 0 && src.BlackboxCoefficientsPath == "" {
		c.rows, c.blackboxDefs = defs.Models, c.defaults
	} else {
		bbData, err := read(src.BlackboxCoefficientsPath, embeddedBlackbox)
		if err != nil {
			return nil, fmt.Errorf("blackbox coefficients: %w", err)
		}
		bb, err := ParseDefaults(bbData)
		if err != nil {
			return nil, fmt.Errorf("blackbox coefficients: %w", err)
		}
		c.rows, c.blackboxDefs = bb.Models, lowerKeys(bb.Defaults)
	}

	if err := c.loadConfigs(src.ModelConfigDir); err != nil {
		return nil, err
	}
	c.buildEntries()
	return c, nil
}

func lowerKeys(m map[string]Defaults) map[string]Defaults {
	out := make(map[string]Defaults, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}

func (c *Catalog) loadConfigs(dir string) error {
	if dir == "" {
		entries, err := fs.ReadDir(embedded, embeddedModelConfigs)
		if err != nil {
			return fmt.Errorf("embedded model configs: %w", err)
		}
		for _, e := range entries {
			data, err := embedded.ReadFile(path.Join(embeddedModelConfigs, e.Name(), "config.json"))
			if err != nil {
				continue // a folder without config.json is not a model
			}
			c.configs[strings.ToLower(e.Name())] = data
		}
		return nil
	}
	if data, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
		c.single, c.singlePath = data, filepath.Join(dir, "config.json")
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("model config folder: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "config.json"))
		if err != nil {
			continue
		}
		c.configs[strings.ToLower(e.Name())] = data
	}
	if len(c.configs) == 0 {
		return fmt.Errorf("model config folder %s: no config.json in it or in its sub-folders", dir)
	}
	return nil
}

// folderFor finds the config folder of a BLIS id: the id's last path segment, else the
// last segment of its Hugging Face repository.
func (c *Catalog) folderFor(id string, d Defaults) string {
	for _, cand := range []string{id, d.HFRepo} {
		if cand == "" {
			continue
		}
		seg := strings.ToLower(cand[strings.LastIndex(cand, "/")+1:])
		if _, ok := c.configs[seg]; ok {
			return seg
		}
	}
	return ""
}

func (c *Catalog) buildEntries() {
	used := map[string]bool{}
	for id, d := range c.defaults {
		f := c.folderFor(id, d)
		used[f] = f != ""
		c.entries = append(c.entries, Entry{ID: id, Folder: f, HFRepo: d.HFRepo, DefaultGPU: d.GPU, DefaultTP: d.TensorParallelism})
	}
	for f := range c.configs {
		if !used[f] {
			c.entries = append(c.entries, Entry{Folder: f})
		}
	}
	sort.Slice(c.entries, func(i, j int) bool { return c.entries[i].Name() < c.entries[j].Name() })
}

// Models lists the catalog's models sorted by name.
func (c *Catalog) Models() []Entry { return append([]Entry(nil), c.entries...) }

// Hardware returns the GPU catalog.
func (c *Catalog) Hardware() *HardwareCatalog { return c.hardware }

// TrainedPhysicsCoefficients returns the global trained-physics coefficients of defaults.yaml.
func (c *Catalog) TrainedPhysicsCoefficients() (Coefficients, error) {
	if c.trainedPhysics == nil {
		return Coefficients{}, errors.New("defaults file has no trained_physics_coefficients section")
	}
	return Coefficients{
		Alpha: append([]float64(nil), c.trainedPhysics.Alpha...),
		Beta:  append([]float64(nil), c.trainedPhysics.Beta...),
	}, nil
}

// LookupModel finds a model by BLIS id ("meta-llama/llama-3.1-8b-instruct"), config folder
// ("llama-3.1-8b-instruct") or Hugging Face repository, case-insensitively. An unknown name is
// an error listing the known models.
func (c *Catalog) LookupModel(name string) (Entry, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	for _, e := range c.entries {
		if key != "" && (key == e.ID || key == e.Folder || key == strings.ToLower(e.HFRepo)) {
			return e, nil
		}
	}
	if c.single != nil {
		// A single-model config folder serves whatever name the user gives it.
		return Entry{ID: key, Folder: filepath.Base(filepath.Dir(c.singlePath))}, nil
	}
	return Entry{}, fmt.Errorf("model %q is not known (known: %s)", name, strings.Join(c.modelNames(), ", "))
}

func (c *Catalog) modelNames() []string {
	names := make([]string, 0, len(c.entries))
	for _, e := range c.entries {
		n := e.Name()
		if e.ID != "" && e.Folder != "" {
			n += " (" + e.Folder + ")"
		}
		names = append(names, n)
	}
	return names
}

// ModelConfig returns the validated architecture of a catalog model.
func (c *Catalog) ModelConfig(e Entry) (*HFModelConfig, error) {
	var data []byte
	var src string
	switch {
	case c.single != nil:
		data, src = c.single, c.singlePath
	case e.Folder != "":
		data, src = c.configs[e.Folder], e.Folder+"/config.json"
	default:
		have := make([]string, 0, len(c.configs))
		for f := range c.configs {
			have = append(have, f)
		}
		sort.Strings(have)
		return nil, fmt.Errorf("model %q has no config.json in the catalog (configs: %s); give a model config folder or an inline config", e.Name(), strings.Join(have, ", "))
	}
	m, err := ParseHFConfig(data)
	if err != nil {
		return nil, fmt.Errorf("model %q (%s): %w", e.Name(), src, err)
	}
	m.ModelID = e.Name()
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("model %q (%s): %w", e.Name(), src, err)
	}
	return m, nil
}

// BlackboxRows returns the blackbox rows of a model id, sorted by GPU, TP and vLLM version.
func (c *Catalog) BlackboxRows(modelID string) []BlackboxRow {
	id := strings.ToLower(modelID)
	var out []BlackboxRow
	for _, r := range c.rows {
		if strings.ToLower(r.ID) == id {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.GPU != b.GPU {
			return a.GPU < b.GPU
		}
		if a.TensorParallelism != b.TensorParallelism {
			return a.TensorParallelism < b.TensorParallelism
		}
		return a.VLLMVersion < b.VLLMVersion
	})
	return out
}

// BlackboxCoefficients returns the blackbox row for (model id, GPU, TP, vLLM version), as
// BLIS's GetCoefficients does: the first row matching all four exactly (GPU names compared
// through the hardware aliases). An empty version takes the model's vllm_version from the
// defaults section of the blackbox file. A missing row is an error listing the model's rows.
func (c *Catalog) BlackboxCoefficients(modelID, gpu string, tp int, vllmVersion string) (BlackboxRow, error) {
	id := strings.ToLower(modelID)
	version := vllmVersion
	if version == "" {
		version = c.blackboxDefs[id].VLLMVersion
	}
	want := c.canonicalGPU(gpu)
	rows := c.BlackboxRows(id)
	for _, r := range c.rows { // file order, as BLIS takes the first match
		if strings.ToLower(r.ID) == id && r.TensorParallelism == tp && c.canonicalGPU(r.GPU) == want &&
			(version == "" || r.VLLMVersion == version) {
			return r, nil
		}
	}
	if len(rows) == 0 {
		var ids []string
		seen := map[string]bool{}
		for _, r := range c.rows {
			if k := strings.ToLower(r.ID); !seen[k] {
				seen[k] = true
				ids = append(ids, k)
			}
		}
		sort.Strings(ids)
		return BlackboxRow{}, fmt.Errorf("blackbox coefficients: no rows for model %q (models with rows: %s)", modelID, strings.Join(ids, ", "))
	}
	have := make([]string, len(rows))
	for i, r := range rows {
		have[i] = fmt.Sprintf("%s/TP%d/%s", r.GPU, r.TensorParallelism, r.VLLMVersion)
	}
	return BlackboxRow{}, fmt.Errorf("blackbox coefficients: no row for model %q on GPU %s with TP %d and vLLM version %q (rows for this model: %s)",
		modelID, gpu, tp, version, strings.Join(have, ", "))
}

// canonicalGPU maps a GPU name to the catalog's name when known, else lower-cases it.
// A100-SXM and A100-80 are one GPU (hardware_config.json says so); rows use A100-80.
func (c *Catalog) canonicalGPU(name string) string {
	n := strings.ToLower(name)
	if h, err := c.hardware.Lookup(name); err == nil {
		n = h.Name
	}
	if strings.EqualFold(n, "A100-SXM") {
		return gpuA100
	}
	return n
}
