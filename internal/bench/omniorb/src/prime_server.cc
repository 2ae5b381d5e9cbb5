// prime_server: an unmodified omniORB C++ server of the Prime interface
// (prime.idl), used as a replica behind fulcrum in e2e/omniorb.
//
//   prime_server [-ORB<option> <value>]... [--port N] [--log-calls] [--id ID]
//
// It activates one Prime object in omniORB's omniINSPOA under the object
// key ID (default "Prime"), so it is reachable both through the IOR it
// prints and as corbaloc:iiop:127.0.0.1:PORT/ID. It listens on the
// loopback interface only: giop:tcp:127.0.0.1:PORT (PORT 0 or absent: any
// free port). Any -ORB option given (e.g. -ORBtraceLevel 10) is passed to
// the ORB.
//
// stdout, one line each, flushed:
//   IOR:...                                  first, once the object is active
//   {"op":"is_prime","arg":7,"peer":"giop:tcp:127.0.0.1:40312"}
//                                            per call served, with --log-calls
//                                            (peer: the client connection)
// Errors go to stderr; the exit status is 0 on SIGTERM/SIGINT, 2 on bad
// arguments and 1 on a CORBA error.
#include <omniORB4/CORBA.h>
#include <omniORB4/omniInterceptors.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "prime.hh"

namespace {

// The address of the client connection whose request this thread is
// serving: the serverReceiveRequest interceptor runs on the thread that
// then makes the upcall.
thread_local std::string currentPeer;

CORBA::Boolean notePeer(omni::omniInterceptors::serverReceiveRequest_T::info_T& info) {
  const char* peer = info.peeraddress();
  currentPeer = peer ? peer : "";
  return true;
}

bool logCalls = false;

// logCall prints one JSON line per call (stdio's lock keeps lines whole
// across the ORB's worker threads).
void logCall(const char* op, CORBA::Long arg) {
  if (!logCalls) return;
  std::printf("{\"op\":\"%s\",\"arg\":%ld,\"peer\":\"%s\"}\n", op, static_cast<long>(arg), currentPeer.c_str());
  std::fflush(stdout);
}

class PrimeImpl : public POA_Prime {
 public:
  CORBA::Boolean is_prime(CORBA::Long n) override {
    logCall("is_prime", n);
    return isPrime(n);
  }

  CORBA::Long prime_count(CORBA::Long x) override {
    logCall("prime_count", x);
    CORBA::Long count = 0;
    for (CORBA::Long i = 2; i < x; ++i) {
      if (isPrime(i)) ++count;
    }
    return count;
  }

 private:
  static bool isPrime(CORBA::Long n) {
    if (n < 2) return false;
    for (CORBA::Long d = 2; static_cast<long long>(d) * d <= n; ++d) {
      if (n % d == 0) return false;
    }
    return true;
  }
};

void usage(const char* why) {
  std::fprintf(stderr, "prime_server: %s\nusage: prime_server [-ORB<option> <value>]... [--port N] [--log-calls] [--id ID]\n", why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  // The endpoint must reach ORB_init, so read --port before it.
  std::string port = "";
  std::string id = "Prime";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--port") {
      if (i + 1 >= argc) usage("--port: missing value");
      char* end = nullptr;
      long p = std::strtol(argv[i + 1], &end, 10);
      if (*argv[i + 1] == '\0' || *end != '\0' || p < 0 || p > 65535) usage((std::string("--port: ") + argv[i + 1] + ": want 0..65535").c_str());
      port = p == 0 ? "" : argv[i + 1];
      ++i;
    } else if (a == "--log-calls") {
      logCalls = true;
    } else if (a == "--id") {
      if (i + 1 >= argc || !*argv[i + 1]) usage("--id: missing value");
      id = argv[++i];
    } else if (a.rfind("-ORB", 0) == 0) {
      ++i;  // an ORB option and its value, for ORB_init
    } else {
      usage((std::string("unknown argument: ") + a).c_str());
    }
  }
  std::string endpoint = "giop:tcp:127.0.0.1:" + port;
  const char* options[][2] = {{"endPoint", endpoint.c_str()}, {nullptr, nullptr}};

  // Block SIGTERM and SIGINT in every thread (the ORB's threads inherit the
  // mask) and wait for them here.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  try {
    CORBA::ORB_var orb = CORBA::ORB_init(argc, argv, "omniORB4", options);
    if (logCalls) omniORB::getInterceptors()->serverReceiveRequest.add(notePeer);

    CORBA::Object_var obj = orb->resolve_initial_references("omniINSPOA");
    PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
    PortableServer::ObjectId_var oid = PortableServer::string_to_ObjectId(id.c_str());
    PrimeImpl* servant = new PrimeImpl;
    poa->activate_object_with_id(oid, servant);
    servant->_remove_ref();
    poa->the_POAManager()->activate();

    obj = poa->id_to_reference(oid);
    CORBA::String_var ior = orb->object_to_string(obj);
    std::printf("%s\n", static_cast<const char*>(ior));
    std::fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    orb->destroy();
  } catch (CORBA::SystemException& e) {
    std::fprintf(stderr, "prime_server: CORBA %s (minor 0x%lx)\n", e._name(), static_cast<unsigned long>(e.minor()));
    return 1;
  } catch (CORBA::Exception& e) {
    std::fprintf(stderr, "prime_server: CORBA %s\n", e._name());
    return 1;
  }
  return 0;
}
