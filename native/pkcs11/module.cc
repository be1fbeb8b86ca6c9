#include "pkcs11/module.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

namespace qe::pkcs11 {

std::string rv_name(ck::RV rv) {
  switch (rv) {
#define QE_RV(name) \
  case ck::name:    \
    return #name;
    QE_RV(CKR_OK)
    QE_RV(CKR_CANCEL)
    QE_RV(CKR_HOST_MEMORY)
    QE_RV(CKR_SLOT_ID_INVALID)
    QE_RV(CKR_GENERAL_ERROR)
    QE_RV(CKR_FUNCTION_FAILED)
    QE_RV(CKR_ARGUMENTS_BAD)
    QE_RV(CKR_NO_EVENT)
    QE_RV(CKR_NEED_TO_CREATE_THREADS)
    QE_RV(CKR_CANT_LOCK)
    QE_RV(CKR_DATA_INVALID)
    QE_RV(CKR_DATA_LEN_RANGE)
    QE_RV(CKR_DEVICE_ERROR)
    QE_RV(CKR_DEVICE_MEMORY)
    QE_RV(CKR_DEVICE_REMOVED)
    QE_RV(CKR_FUNCTION_CANCELED)
    QE_RV(CKR_FUNCTION_NOT_PARALLEL)
    QE_RV(CKR_FUNCTION_NOT_SUPPORTED)
    QE_RV(CKR_OPERATION_ACTIVE)
    QE_RV(CKR_OPERATION_NOT_INITIALIZED)
    QE_RV(CKR_PIN_INCORRECT)
    QE_RV(CKR_PIN_INVALID)
    QE_RV(CKR_PIN_LEN_RANGE)
    QE_RV(CKR_PIN_EXPIRED)
    QE_RV(CKR_PIN_LOCKED)
    QE_RV(CKR_SESSION_CLOSED)
    QE_RV(CKR_SESSION_COUNT)
    QE_RV(CKR_SESSION_HANDLE_INVALID)
    QE_RV(CKR_SESSION_PARALLEL_NOT_SUPPORTED)
    QE_RV(CKR_SESSION_READ_ONLY)
    QE_RV(CKR_SESSION_EXISTS)
    QE_RV(CKR_TOKEN_NOT_PRESENT)
    QE_RV(CKR_TOKEN_NOT_RECOGNIZED)
    QE_RV(CKR_TOKEN_WRITE_PROTECTED)
    QE_RV(CKR_USER_ALREADY_LOGGED_IN)
    QE_RV(CKR_USER_NOT_LOGGED_IN)
    QE_RV(CKR_USER_PIN_NOT_INITIALIZED)
    QE_RV(CKR_USER_TYPE_INVALID)
    QE_RV(CKR_USER_ANOTHER_ALREADY_LOGGED_IN)
    QE_RV(CKR_USER_TOO_MANY_TYPES)
    QE_RV(CKR_RANDOM_SEED_NOT_SUPPORTED)
    QE_RV(CKR_RANDOM_NO_RNG)
    QE_RV(CKR_BUFFER_TOO_SMALL)
    QE_RV(CKR_CRYPTOKI_NOT_INITIALIZED)
    QE_RV(CKR_CRYPTOKI_ALREADY_INITIALIZED)
    QE_RV(CKR_MUTEX_BAD)
    QE_RV(CKR_MUTEX_NOT_LOCKED)
    QE_RV(CKR_FUNCTION_REJECTED)
#undef QE_RV
    default:
      break;
  }
  char buf[48];
  if (rv & ck::CKR_VENDOR_DEFINED)
    std::snprintf(buf, sizeof buf, "CKR_VENDOR_DEFINED+0x%lx", rv & ~ck::CKR_VENDOR_DEFINED);
  else
    std::snprintf(buf, sizeof buf, "CKR_0x%lx", rv);
  return buf;
}

namespace {

std::string describe(const std::string& function, ck::RV rv, const std::string& detail) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%lx", rv);
  std::string s = function + ": " + rv_name(rv) + " (" + hex + ")";
  if (!detail.empty()) s += ": " + detail;
  return s;
}

}  // namespace

Pkcs11Error::Pkcs11Error(const std::string& function, ck::RV rv, const std::string& detail)
    : std::runtime_error(describe(function, rv, detail)), function_(function), rv_(rv) {}

std::string trim_padded(const unsigned char* field, size_t width) {
  size_t n = width;
  while (n > 0 && (field[n - 1] == ' ' || field[n - 1] == '\0')) --n;
  return std::string(reinterpret_cast<const char*>(field), n);
}

struct Module::Loaded {
  std::string path;
  void* handle = nullptr;
  ck::FUNCTION_LIST* fn = nullptr;
  bool we_initialized = false;
  ~Loaded() {
    if (fn && we_initialized) fn->C_Finalize(nullptr);
    if (handle) dlclose(handle);
  }
};

namespace {

std::mutex g_modules_mutex;
std::map<std::string, std::weak_ptr<Module::Loaded>>& modules() {
  static std::map<std::string, std::weak_ptr<Module::Loaded>> m;
  return m;
}

std::shared_ptr<Module::Loaded> load(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_modules_mutex);
  if (auto existing = modules()[path].lock()) return existing;
  auto loaded = std::make_shared<Module::Loaded>();
  loaded->path = path;
  dlerror();
  loaded->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!loaded->handle) {
    const char* err = dlerror();
    throw ModuleLoadError("cannot load PKCS#11 module " + path + ": " + (err ? err : "dlopen failed"));
  }
  auto get_list = reinterpret_cast<ck::Fn_C_GetFunctionList>(dlsym(loaded->handle, "C_GetFunctionList"));
  if (!get_list) throw ModuleLoadError(path + " is not a PKCS#11 module: it has no C_GetFunctionList");
  ck::RV rv = get_list(&loaded->fn);
  if (rv != ck::CKR_OK || !loaded->fn) throw Pkcs11Error("C_GetFunctionList", rv, path);
  if (loaded->fn->version.major != 2)
    throw ModuleLoadError(path + " speaks PKCS#11 " + std::to_string(loaded->fn->version.major) + "." +
                          std::to_string(loaded->fn->version.minor) + "; this sink needs a 2.x function list");
  // The module may be called from worker threads: let it use the OS's own locks.
  ck::C_INITIALIZE_ARGS args{};
  args.flags = ck::CKF_OS_LOCKING_OK;
  rv = loaded->fn->C_Initialize(&args);
  if (rv == ck::CKR_OK)
    loaded->we_initialized = true;
  else if (rv != ck::CKR_CRYPTOKI_ALREADY_INITIALIZED)  // someone else in the process did; share it
    throw Pkcs11Error("C_Initialize", rv, path);
  modules()[path] = loaded;
  return loaded;
}

}  // namespace

Module::Module(const std::string& path) : path_(path), loaded_(load(path)), fn_(loaded_->fn) {}

Module::~Module() {
  std::lock_guard<std::mutex> lock(g_modules_mutex);
  loaded_.reset();  // the last reference finalizes and unloads, under the registry lock
}

std::string Module::library_description() const {
  ck::INFO info{};
  if (fn_->C_GetInfo(&info) != ck::CKR_OK) return "";
  return trim_padded(info.libraryDescription, sizeof info.libraryDescription);
}

std::vector<TokenInfo> Module::tokens() const {
  ck::ULONG count = 0;
  ck::RV rv = fn_->C_GetSlotList(ck::TRUE_, nullptr, &count);
  if (rv != ck::CKR_OK) throw Pkcs11Error("C_GetSlotList", rv, path_);
  std::vector<ck::SLOT_ID> slots(count);
  // The count can grow between the two calls (a token plugged in): retry on that answer.
  for (int attempt = 0; attempt < 4; ++attempt) {
    slots.resize(count);
    rv = fn_->C_GetSlotList(ck::TRUE_, slots.data(), &count);
    if (rv != ck::CKR_BUFFER_TOO_SMALL) break;
  }
  if (rv != ck::CKR_OK) throw Pkcs11Error("C_GetSlotList", rv, path_);
  slots.resize(count);
  std::vector<TokenInfo> out;
  for (ck::SLOT_ID slot : slots) {
    ck::TOKEN_INFO info{};
    if (fn_->C_GetTokenInfo(slot, &info) != ck::CKR_OK) continue;
    TokenInfo t;
    t.slot = slot;
    t.label = trim_padded(info.label, sizeof info.label);
    t.manufacturer = trim_padded(info.manufacturerID, sizeof info.manufacturerID);
    t.model = trim_padded(info.model, sizeof info.model);
    t.serial = trim_padded(info.serialNumber, sizeof info.serialNumber);
    t.flags = info.flags;
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<ck::SLOT_ID> Module::find_slots(const std::string& label) const {
  std::string wanted = label;
  while (!wanted.empty() && wanted.back() == ' ') wanted.pop_back();
  std::vector<ck::SLOT_ID> out;
  for (const TokenInfo& t : tokens())
    if (t.label == wanted) out.push_back(t.slot);
  return out;
}

ck::RV Module::open_session(ck::SLOT_ID slot, ck::SESSION_HANDLE* session) const {
  // Read/write is not needed for seeding, but some tokens only accept C_SeedRandom there.
  ck::RV rv = fn_->C_OpenSession(slot, ck::CKF_SERIAL_SESSION | ck::CKF_RW_SESSION, nullptr, nullptr, session);
  if (rv == ck::CKR_TOKEN_WRITE_PROTECTED)
    rv = fn_->C_OpenSession(slot, ck::CKF_SERIAL_SESSION, nullptr, nullptr, session);
  return rv;
}

ck::RV Module::close_session(ck::SESSION_HANDLE session) const { return fn_->C_CloseSession(session); }

ck::RV Module::login_user(ck::SESSION_HANDLE session, const std::string& pin) const {
  std::vector<ck::UTF8CHAR> buf(pin.begin(), pin.end());
  const ck::RV rv = fn_->C_Login(session, ck::CKU_USER, buf.data(), buf.size());
  explicit_bzero(buf.data(), buf.size());
  return rv;
}

ck::RV Module::seed_random(ck::SESSION_HANDLE session, const uint8_t* data, size_t size) const {
  return fn_->C_SeedRandom(session, const_cast<ck::BYTE*>(data), size);
}

ck::RV Module::generate_random(ck::SESSION_HANDLE session, uint8_t* out, size_t size) const {
  return fn_->C_GenerateRandom(session, out, size);
}

}  // namespace qe::pkcs11
