package model

import "embed"

// embedded holds the BLIS data files shipped with the engine (see data/NOTICE.md).
//
//go:embed data/defaults.yaml data/defaults_blackbox_coefficients.yaml data/hardware_config.json data/model_configs data/NOTICE.md
var embedded embed.FS

// Paths of the embedded files inside the embedded file system.
const (
	embeddedDefaults     = "data/defaults.yaml"
	embeddedBlackbox     = "data/defaults_blackbox_coefficients.yaml"
	embeddedHardware     = "data/hardware_config.json"
	embeddedModelConfigs = "data/model_configs"
)
