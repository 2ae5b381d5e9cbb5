// prime_client: an unmodified omniORB C++ client of the Prime interface
// (prime.idl): it resolves a reference (IOR:... or corbaloc:...) with
// string_to_object and _narrow and calls it, as any application would;
// fulcrum's GIOP front door must balance it through standard GIOP alone.
//
//   prime_client [-ORB<option> <value>]... [--calls N] [--rate R]
//                [--op is_prime|prime_count] [--arg X] [--per-call]
//                [--interactive] [--inits K] [--start-at UNIX_US] [--latencies] REF
//
// Modes:
//   default        one ORB, N calls (default 1), then a summary line.
//   --interactive  one ORB; each line read from stdin is a number N: make
//                  N calls and print their summary; end of input exits.
//   --inits K      K times: ORB_init, string_to_object, _narrow, one call,
//                  ORB destroy; per-init lines and a summary (the time to
//                  the first reply of fresh ORBs).
// --rate R paces calls at R per second (0, the default: closed loop, each
// call as soon as the previous one returned) on a fixed grid: call k is
// meant to be sent k/R seconds after the batch's start, and one that
// cannot be (the previous call still running) is sent as soon as it can.
// --start-at UNIX_US starts the (first) batch's grid at that wall-clock
// time, in microseconds since the Unix epoch (the reference is resolved
// before; a time already past starts at once): several clients then share
// one time base. --per-call prints a line per call. --latencies adds every
// successful call's "us" to the summary line, in call order (what a bench
// turns into a histogram without a line per call). -ORB options go to
// ORB_init.
//
// stdout, one JSON object per line, flushed:
//   {"call":3,"ok":true,"result":1,"us":212,"late_us":0,"peer":"giop:tcp:127.0.0.1:4001","sends":1}
//   {"call":4,"ok":false,"error":"COMM_FAILURE","minor":"0x41540002","us":90,"late_us":0,"peer":"...","sends":1}
//   {"summary":true,"calls":N,"ok":K,"comm_failure":A,"transient":B,"other":C,
//    "resolve_us":R,"first_us":F,"mean_us":M,"elapsed_us":E,"sends":S,
//    "peers":{"giop:tcp:...":K,...},"errors":{"COMM_FAILURE":A,...}
//    [,"latencies_us":[212,198,...]]}
//   {"init":2,"ok":true,"us":1466,"init_us":310,"sends":1}   (--inits)
// elapsed_us runs from the batch's first call to the summary.
// resolve_us is string_to_object and _narrow (-1: not measured), where
// omniORB may send its first LocateRequest or _is_a; first_us is the first
// call. With --inits, a line per fresh ORB: "us" from after ORB_init to
// the first reply, "init_us" ORB_init itself; the summary's mean_us is the
// mean of "us". "peer" is where the call's reply came from (after any forward), "sends"
// how many Requests the call took (2: forwarded once). "us" is the
// call's wall time in microseconds; "late_us" how long after its intended
// time on the --rate grid it was sent (0 in a closed loop), so that
// us + late_us is its latency counted from when it was meant to be sent.
// The exit status is 0 when every call
// succeeded, 3 when some failed, 2 on bad arguments, 1 when the reference
// cannot be resolved.
#include <omniORB4/CORBA.h>
#include <omniORB4/omniInterceptors.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "prime.hh"

namespace {

using Clock = std::chrono::steady_clock;

// How many Requests the current call took, counted by the
// clientSendRequest interceptor, and where the last reply came from, noted
// by clientReceiveReply (at send time a new connection has no peer address
// yet). The application thread makes one call at a time; the mutex only
// orders it with the ORB's threads.
std::mutex sendMu;
std::string lastPeer;
int sends = 0;

CORBA::Boolean recordSend(omni::omniInterceptors::clientSendRequest_T::info_T&) {
  std::lock_guard<std::mutex> lock(sendMu);
  ++sends;
  return true;
}

CORBA::Boolean recordReply(omni::omniInterceptors::clientReceiveReply_T::info_T& info) {
  std::lock_guard<std::mutex> lock(sendMu);
  const char* peer = info.peeraddress();
  lastPeer = peer ? peer : "";
  return true;
}

void resetSends() {
  std::lock_guard<std::mutex> lock(sendMu);
  lastPeer.clear();
  sends = 0;
}

struct Options {
  long calls = 1;
  double rate = 0;
  std::string op = "is_prime";
  long arg = 1000003;
  bool perCall = false;
  bool interactive = false;
  bool latencies = false;
  long long startAtUs = 0;  // --start-at; 0: none
  long inits = 0;
  std::string ref;
  std::vector<std::string> orbArgs;  // -ORBx value pairs, for every ORB_init
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "prime_client: %s\nusage: prime_client [-ORB<option> <value>]... [--calls N] [--rate R] "
               "[--op is_prime|prime_count] [--arg X] [--per-call] [--interactive] [--inits K] [--start-at UNIX_US] "
               "[--latencies] REF\n",
               why.c_str());
  std::exit(2);
}

long parseLong(const std::string& flag, const char* v, long min, long max) {
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n < min || n > max)
    usage(flag + ": " + v + ": want an integer in " + std::to_string(min) + ".." + std::to_string(max));
  return n;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(a + ": missing value");
      return argv[++i];
    };
    if (a == "--calls") {
      o.calls = parseLong(a, value(), 0, 100000000);
    } else if (a == "--rate") {
      const char* v = value();
      char* end = nullptr;
      o.rate = std::strtod(v, &end);
      if (*v == '\0' || *end != '\0' || !(o.rate >= 0 && o.rate <= 1e6)) usage(a + ": " + v + ": want calls per second in 0..1e6");
    } else if (a == "--op") {
      o.op = value();
      if (o.op != "is_prime" && o.op != "prime_count") usage("--op: " + o.op + ": allowed: is_prime, prime_count");
    } else if (a == "--arg") {
      o.arg = parseLong(a, value(), -2147483648L, 2147483647L);
    } else if (a == "--per-call") {
      o.perCall = true;
    } else if (a == "--interactive") {
      o.interactive = true;
    } else if (a == "--latencies") {
      o.latencies = true;
    } else if (a == "--start-at") {
      const char* v = value();
      char* end = nullptr;
      o.startAtUs = std::strtoll(v, &end, 10);
      if (*v == '\0' || *end != '\0' || o.startAtUs <= 0) usage(a + ": " + v + ": want microseconds since the Unix epoch");
    } else if (a == "--inits") {
      o.inits = parseLong(a, value(), 1, 1000000);
    } else if (a.rfind("-ORB", 0) == 0) {
      o.orbArgs.push_back(a);
      o.orbArgs.push_back(value());
    } else if (!a.empty() && a[0] == '-') {
      usage("unknown flag: " + a);
    } else if (o.ref.empty()) {
      o.ref = a;
    } else {
      usage("one reference only, got " + o.ref + " and " + a);
    }
  }
  if (o.ref.empty()) usage("missing the reference (IOR:... or corbaloc:...)");
  if (o.interactive && o.inits) usage("--interactive and --inits exclude each other");
  if (o.startAtUs && o.inits) usage("--start-at and --inits exclude each other");
  return o;
}

CORBA::ORB_ptr initORB(const Options& o) {
  std::vector<std::string> store = o.orbArgs;
  store.insert(store.begin(), "prime_client");
  std::vector<char*> args;
  for (auto& s : store) args.push_back(&s[0]);
  args.push_back(nullptr);
  int n = static_cast<int>(store.size());
  CORBA::ORB_ptr orb = CORBA::ORB_init(n, args.data(), "omniORB4");
  // Interceptors can only be added to an initialised ORB; an ORB destroyed
  // and initialised again (--inits) starts with none.
  omniORB::getInterceptors()->clientSendRequest.add(recordSend);
  omniORB::getInterceptors()->clientReceiveReply.add(recordReply);
  return orb;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Batch tallies the calls of one summary.
struct Batch {
  long calls = 0, ok = 0, commFailure = 0, transient = 0, other = 0, sends = 0;
  long long firstUs = -1, totalUs = 0, resolveUs = -1;
  std::map<std::string, long> peers, errors;
  std::vector<long long> latencies;  // with --latencies: each successful call's us
  bool withLatencies = false;
  Clock::time_point start = Clock::now();

  void print() const {
    long long elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    std::string s = "{\"summary\":true,\"calls\":" + std::to_string(calls) + ",\"ok\":" + std::to_string(ok) +
                    ",\"comm_failure\":" + std::to_string(commFailure) + ",\"transient\":" + std::to_string(transient) +
                    ",\"other\":" + std::to_string(other) + ",\"resolve_us\":" + std::to_string(resolveUs) + ",\"first_us\":" + std::to_string(firstUs) +
                    ",\"mean_us\":" + std::to_string(calls ? totalUs / calls : 0) + ",\"elapsed_us\":" + std::to_string(elapsed) +
                    ",\"sends\":" + std::to_string(sends) + ",\"peers\":{";
    bool first = true;
    for (auto& p : peers) {
      s += (first ? "" : ",") + jsonString(p.first) + ":" + std::to_string(p.second);
      first = false;
    }
    s += "},\"errors\":{";
    first = true;
    for (auto& e : errors) {
      s += (first ? "" : ",") + jsonString(e.first) + ":" + std::to_string(e.second);
      first = false;
    }
    s += "}";
    if (withLatencies) {
      s += ",\"latencies_us\":[";
      for (size_t i = 0; i < latencies.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(latencies[i]);
      }
      s += "]";
    }
    s += "}";
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
  }
};

// call makes one call, sent lateUs after its intended time, and records
// it in b.
void call(Prime_ptr p, const Options& o, long seq, Batch& b, long long lateUs = 0) {
  resetSends();
  std::string error, minor, result;
  Clock::time_point t0 = Clock::now();
  try {
    if (o.op == "is_prime") {
      result = p->is_prime(static_cast<CORBA::Long>(o.arg)) ? "true" : "false";
    } else {
      result = std::to_string(p->prime_count(static_cast<CORBA::Long>(o.arg)));
    }
  } catch (CORBA::SystemException& e) {
    error = e._name();
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(e.minor()));
    minor = buf;
  } catch (CORBA::Exception& e) {
    error = e._name();
  }
  long long us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
  std::string peer;
  int n;
  {
    std::lock_guard<std::mutex> lock(sendMu);
    peer = lastPeer;
    n = sends;
  }
  ++b.calls;
  b.sends += n;
  b.totalUs += us;
  if (b.firstUs < 0) b.firstUs = us;
  if (error.empty()) {
    ++b.ok;
    ++b.peers[peer];
    if (b.withLatencies) b.latencies.push_back(us);
  } else {
    ++b.errors[error];
    if (error == "COMM_FAILURE") {
      ++b.commFailure;
    } else if (error == "TRANSIENT") {
      ++b.transient;
    } else {
      ++b.other;
    }
  }
  if (o.perCall) {
    std::string s = "{\"call\":" + std::to_string(seq) + ",\"ok\":" + (error.empty() ? "true" : "false");
    if (error.empty()) {
      s += ",\"result\":" + result;
    } else {
      s += ",\"error\":" + jsonString(error);
      if (!minor.empty()) s += ",\"minor\":" + jsonString(minor);
    }
    s += ",\"us\":" + std::to_string(us) + ",\"late_us\":" + std::to_string(lateUs) + ",\"peer\":" + jsonString(peer) + ",\"sends\":" + std::to_string(n) + "}";
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
  }
}

// calls makes n calls on p, paced by o.rate from start, numbering them
// from *seq.
void calls(Prime_ptr p, const Options& o, long n, long* seq, Batch& b, Clock::time_point start) {
  b.withLatencies = o.latencies;
  if (o.latencies) b.latencies.reserve(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) {
    long long lateUs = 0;
    if (o.rate > 0) {
      Clock::time_point intended = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i / o.rate));
      std::this_thread::sleep_until(intended);
      lateUs = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - intended).count();
    }
    call(p, o, ++*seq, b, lateUs);
  }
}

// startAt waits until the wall-clock time o.startAtUs (if set and still
// ahead) and returns it on the steady clock: the start of the rate grid.
Clock::time_point startAt(const Options& o) {
  Clock::time_point now = Clock::now();
  if (!o.startAtUs) return now;
  long long wallUs =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (o.startAtUs <= wallUs) return now;
  Clock::time_point at = now + std::chrono::microseconds(o.startAtUs - wallUs);
  std::this_thread::sleep_until(at);
  return at;
}

Prime_ptr resolve(CORBA::ORB_ptr orb, const Options& o) {
  CORBA::Object_var obj = orb->string_to_object(o.ref.c_str());
  Prime_ptr p = Prime::_narrow(obj);
  if (CORBA::is_nil(p)) throw CORBA::BAD_PARAM();
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  long seq = 0;
  Batch total;
  try {
    if (o.inits) {
      for (long i = 0; i < o.inits; ++i) {
        Clock::time_point t0 = Clock::now();
        CORBA::ORB_var orb = initORB(o);
        Batch one;  // starts its clock after ORB_init
        long long initUs = std::chrono::duration_cast<std::chrono::microseconds>(one.start - t0).count();
        try {
          Prime_var p = resolve(orb, o);
          call(p, o, ++seq, one);
        } catch (CORBA::SystemException& e) {
          ++one.calls;
          ++one.errors[e._name()];
          ++one.other;
        }
        long long us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - one.start).count();
        std::printf("{\"init\":%ld,\"ok\":%s,\"us\":%lld,\"init_us\":%lld,\"sends\":%ld}\n", i + 1, one.ok ? "true" : "false", us,
                    initUs, one.sends);
        std::fflush(stdout);
        total.calls += one.calls;
        total.ok += one.ok;
        total.commFailure += one.commFailure;
        total.transient += one.transient;
        total.other += one.other;
        total.sends += one.sends;
        total.totalUs += us;  // per fresh ORB: string_to_object, _narrow and the first reply
        if (total.firstUs < 0) total.firstUs = us;
        for (auto& kv : one.peers) total.peers[kv.first] += kv.second;
        for (auto& kv : one.errors) total.errors[kv.first] += kv.second;
        orb->destroy();
      }
      total.print();
    } else {
      CORBA::ORB_var orb = initORB(o);
      Clock::time_point t0 = Clock::now();
      Prime_var p = resolve(orb, o);
      total.resolveUs = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
      if (o.interactive) {
        std::string line;
        bool first = true;
        while (std::getline(std::cin, line)) {
          if (line.empty()) continue;
          long n = parseLong("stdin", line.c_str(), 0, 100000000);
          Clock::time_point start = first ? startAt(o) : Clock::now();
          first = false;
          Batch b;
          b.start = start;
          calls(p, o, n, &seq, b, start);
          b.print();
          total.calls += b.calls;
          total.ok += b.ok;
        }
      } else {
        total.start = startAt(o);  // elapsed_us: the calls only
        calls(p, o, o.calls, &seq, total, total.start);
        total.print();
      }
      orb->destroy();
    }
  } catch (CORBA::SystemException& e) {
    std::fprintf(stderr, "prime_client: %s: CORBA %s (minor 0x%lx)\n", o.ref.c_str(), e._name(), static_cast<unsigned long>(e.minor()));
    return 1;
  } catch (CORBA::Exception& e) {
    std::fprintf(stderr, "prime_client: %s: CORBA %s\n", o.ref.c_str(), e._name());
    return 1;
  }
  return total.ok == total.calls ? 0 : 3;
}
