#!/usr/bin/env bash
# Builds a minimal Java 17 runtime image, kvroute-jre:local by default, without pulling anything:
# a jlink'ed JRE made from the local JDK, the shared libraries it links against (found with ldd),
# busybox (static) for sh/wget in health checks and debugging, a /tmp, and /etc/passwd + /etc/group
# with a non-root user "kvroute" (uid/gid 10001). The root filesystem is tarred and `docker import`ed.
#
# Use it as the Dockerfile's base where no registry is reachable:
#   docker/jre-base/build.sh && docker build --build-arg JRE_IMAGE=kvroute-jre:local -t kvroute:local .
#
# Environment: JAVA_HOME_17 (default /usr/lib/jvm/java-17-openjdk-amd64, needs its jmods/ directory,
# Debian package openjdk-17-jmods), BUSYBOX (default /bin/busybox, must be statically linked: Debian
# package busybox-static), KVROUTE_JRE_IMAGE (the tag, default kvroute-jre:local).
# Idempotent: the image is rebuilt only when this script or the JDK changed (label kvroute.base-key).
set -euo pipefail

jdk="${JAVA_HOME_17:-/usr/lib/jvm/java-17-openjdk-amd64}"
busybox="${BUSYBOX:-/bin/busybox}"
tag="${KVROUTE_JRE_IMAGE:-kvroute-jre:local}"

# Modules: what the shaded jar needs (jdeps over Netty, Jackson, Micrometer, picocli, jtokkit, Caffeine,
# HdrHistogram, SnakeYAML), plus generous extras so a new dependency does not break the image.
# java.desktop is there for java.beans (SnakeYAML's introspector, Jackson, Micrometer use it); its
# AWT, font, image and sound native libraries are not given their X11/ALSA/freetype dependencies,
# since a headless server never loads them. jdk.incubator.vector: the request parser's string scan
# (the Dockerfile's /app/jvm.args adds it at start).
modules=java.base,java.compiler,java.desktop,java.instrument,java.logging,java.management,java.naming,\
java.net.http,java.prefs,java.scripting,java.security.jgss,java.sql,java.xml,jdk.crypto.ec,\
jdk.jfr,jdk.management,jdk.management.jfr,jdk.naming.dns,jdk.net,jdk.unsupported,jdk.zipfs,jdk.charsets,\
jdk.incubator.vector

[ -d "$jdk/jmods" ] || { echo "build.sh: $jdk/jmods is missing (apt-get install openjdk-17-jmods)" >&2; exit 1; }
[ -x "$busybox" ] || { echo "build.sh: $busybox is missing (apt-get install busybox-static)" >&2; exit 1; }
if ldd "$busybox" >/dev/null 2>&1; then
  echo "build.sh: $busybox is dynamically linked; install busybox-static" >&2
  exit 1
fi

key="$( { cat "$0"; "$jdk/bin/java" -version 2>&1; echo "$modules"; "$busybox" 2>&1 | sed -n 1p; } | sha256sum | cut -c1-16)"
if [ "$(docker image inspect -f '{{index .Config.Labels "kvroute.base-key"}}' "$tag" 2>/dev/null || true)" = "$key" ]; then
  echo "build.sh: $tag is up to date ($key)"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root"/{bin,etc,tmp,app,opt,lib64,usr}
chmod 1777 "$root/tmp"

echo "build.sh: jlink $modules"
"$jdk/bin/jlink" --add-modules "$modules" --output "$root/opt/java" \
  --strip-debug --no-man-pages --no-header-files --compress=2 --generate-cds-archive

# Shared libraries of the java launcher and every native library in the runtime, copied to their
# SONAME paths (symlinks dereferenced, since the loader looks them up by that name).
: >"$work/libs"
while IFS= read -r -d '' f; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^[ \t]*\/[^ ]+ \(/{print $1}' >>"$work/libs" || true
done < <(find "$root/opt/java" -type f \( -name '*.so' -o -path '*/bin/*' \) \
  -not \( -name 'libawt*' -o -name 'libfontmanager.so' -o -name 'libjavajpeg.so' -o -name 'libjawt.so' \
  -o -name 'libjsound.so' -o -name 'liblcms.so' -o -name 'libmlib_image.so' -o -name 'libsplashscreen.so' \) -print0)
# Plus glibc's small compatibility libraries that native code in the jar links against: Netty's
# epoll transport (extracted to /tmp at run time) needs libdl.so.2 and librt.so.1.
for name in libdl.so.2 librt.so.1 libpthread.so.0 libm.so.6 libresolv.so.2 libutil.so.1; do
  # awk reads to the end: an early exit would leave ldconfig to die of SIGPIPE, which pipefail reports
  path="$(ldconfig -p | awk -v n="$name" '$1 == n && /x86-64/ && p == "" {p = $NF} END {print p}')"
  [ -n "$path" ] && echo "$path" >>"$work/libs"
done
sort -u "$work/libs" | while read -r lib; do
  case "$lib" in "$root"*) continue ;; esac
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
# glibc 2.34+ has the files and dns NSS modules inside libc; nsswitch keeps lookups on files then DNS.
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"

cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
ln -s ../bin "$root/usr/bin"
ln -s bin "$root/sbin"

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
kvroute:x:10001:10001:kvroute:/app:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
kvroute:x:10001:
EOF
mkdir -p "$root/root"

# Smoke-test the runtime on the host through the copied loader and libraries only.
"$root/opt/java/bin/java" -version 2>&1 | sed -n 1p

echo "build.sh: importing $tag"
tar -C "$root" --numeric-owner -cf - . | docker import \
  --change 'ENV JAVA_HOME=/opt/java' \
  --change 'ENV PATH=/opt/java/bin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change "LABEL kvroute.base-key=$key" \
  --change 'WORKDIR /app' \
  --change 'CMD ["java", "-version"]' \
  - "$tag" >/dev/null
docker run --rm "$tag" java -version 2>&1 | sed -n 1p
docker image ls "$tag" --format 'build.sh: {{.Repository}}:{{.Tag}} {{.Size}}'
