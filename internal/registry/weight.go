package registry

// ZeroWeightAllowed is what a replica weight written as 0 is told. Decoded
// into a float64, a weight left out and a weight of 0 look the same, so the
// edges that can tell them apart (the API's JSON bodies, the config file)
// reject an explicit 0 with this text before ValidateWeight sees the
// default of 1.
const ZeroWeightAllowed = "must be in (0, 1000000]; leave weight out for the default of 1"
