// Package compaction compacts etcd's history in cluster mode, and only
// below the lowest revision any instance's watches still read from it.
//
// Every instance publishes, under <prefix>compact/<instance> on its
// directory entry's lease (so that it goes with the instance), its lowest
// needed revision: the lowest of what its watches would read from etcd's
// history if their streams broke now — each replicated group's log watch
// (etcdlog.Log.LowestNeeded), the store's watch (etcdstore.Store.
// LowestNeeded) — or etcd's current revision when it runs none
// (Publisher). One instance, the leader of the "_compact" election,
// compacts (Runner): every period it reads every instance's published
// revision and compacts etcd (clientv3.Compact, not physical) to the
// lowest one it captured one period before, no higher than the lowest
// published now; a live instance that has published nothing blocks
// compaction (Core, the pure decision).
//
// Compaction removes history, never keys: a watch whose history is gone
// anyway lists its keys again and goes on (every watch in fulcrum does),
// so the published revisions spare the watches that list, not data.
//
//	needs := &compaction.Needs{}
//	needs.Add(st.LowestNeeded)                     // the store's watch
//	pub, _ := compaction.StartPublisher(compaction.PublisherOptions{Client: cli, Prefix: "/fulcrum/", Instance: "a", Lease: dir.Lease, Needs: needs})
//	run, _ := compaction.StartRunner(compaction.RunnerOptions{Client: cli, Prefix: "/fulcrum/", Every: 5 * time.Minute, Live: names, Leading: leads})
//	defer run.Close(); defer pub.Close()
package compaction
