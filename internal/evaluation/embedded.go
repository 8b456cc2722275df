package evaluation

import _ "embed"

// DefaultManifestName is the file name of the embedded default manifests.
const DefaultManifestName = "capacity-planning.yaml"

// defaultManifests is a copy of config/samples/capacity-planning.yaml (a test keeps the two
// identical): the evaluation `blis evaluate` runs when it is given no files.
//
//go:embed embedded/capacity-planning.yaml
var defaultManifests []byte

// DefaultManifests returns the embedded default manifests.
func DefaultManifests() []byte {
	return append([]byte(nil), defaultManifests...)
}
