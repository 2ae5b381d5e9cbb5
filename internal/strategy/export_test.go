package strategy

// Internals the external tests look at.
var (
	ALBLWeightsOf = alblWeightsOf
	ETTEstimate   = ettEstimate
)
