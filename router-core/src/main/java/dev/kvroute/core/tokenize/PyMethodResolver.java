package dev.kvroute.core.tokenize;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * Python's {@code str} and {@code dict} methods that chat templates call and Jinjava (which calls
 * Java methods) lacks: {@code startswith}, {@code endswith}, {@code split}, {@code rsplit},
 * {@code strip}, {@code lstrip}, {@code rstrip} (with or without characters), {@code upper},
 * {@code lower}, {@code title}, {@code capitalize}, {@code replace}, {@code find}, {@code count},
 * {@code join}; {@code items}, {@code keys}, {@code values} and {@code get} on maps. Anything else is
 * left to the next resolver. Semantics are Python's: {@code split(sep)} splits on the literal
 * separator, {@code split()} on runs of whitespace; {@code strip()} removes Python whitespace.
 *
 * <p>Stateless and thread-safe.
 */
final class PyMethodResolver extends ELResolver {
  @Override
  public Object invoke(ELContext context, Object base, Object method, Class<?>[] types, Object[] params) {
    if (!(method instanceof String name)) {
      return null;
    }
    Object[] args = params == null ? new Object[0] : params;
    Object result;
    if (base instanceof String s) {
      result = stringMethod(s, name, args);
    } else if (base instanceof Map<?, ?> m) {
      result = mapMethod(m, name, args);
    } else {
      return null;
    }
    if (result == NONE) {
      return null;
    }
    context.setPropertyResolved(true);
    return result;
  }

  private static final Object NONE = new Object();

  private static Object stringMethod(String s, String name, Object[] a) {
    switch (name) {
      case "startswith":
        return a.length == 1 ? anyMatch(a[0], p -> s.startsWith(p)) : NONE;
      case "endswith":
        return a.length == 1 ? anyMatch(a[0], p -> s.endsWith(p)) : NONE;
      case "split":
        return split(s, a.length > 0 ? a[0] : null, a.length > 1 ? toInt(a[1]) : -1);
      case "rsplit":
        if (a.length < 2 || toInt(a[1]) < 0) {
          return split(s, a.length > 0 ? a[0] : null, -1);
        }
        return rsplit(s, str(a[0]), toInt(a[1]));
      case "strip":
        return rstrip(lstrip(s, a), a);
      case "lstrip":
        return lstrip(s, a);
      case "rstrip":
        return rstrip(s, a);
      case "upper":
        return s.toUpperCase(java.util.Locale.ROOT);
      case "lower":
        return s.toLowerCase(java.util.Locale.ROOT);
      case "capitalize":
        return s.isEmpty() ? s : s.substring(0, 1).toUpperCase(java.util.Locale.ROOT)
            + s.substring(1).toLowerCase(java.util.Locale.ROOT);
      case "title":
        return title(s);
      case "replace":
        return a.length >= 2 ? s.replace(str(a[0]), str(a[1])) : NONE;
      case "find":
        return a.length == 1 ? (Object) (long) s.indexOf(str(a[0])) : NONE;
      case "count":
        return a.length == 1 ? (Object) count(s, str(a[0])) : NONE;
      case "join":
        if (a.length == 1 && a[0] instanceof Iterable<?> items) {
          List<String> parts = new ArrayList<>();
          for (Object o : items) {
            parts.add(String.valueOf(o));
          }
          return String.join(s, parts);
        }
        return NONE;
      default:
        return NONE;
    }
  }

  private static Object mapMethod(Map<?, ?> m, String name, Object[] a) {
    switch (name) {
      case "items": {
        if (a.length != 0) {
          return NONE;
        }
        List<Object> out = new ArrayList<>(m.size());
        for (Map.Entry<?, ?> e : m.entrySet()) {
          out.add(java.util.Arrays.asList(e.getKey(), e.getValue()));
        }
        return out;
      }
      case "keys":
        return a.length == 0 ? new ArrayList<Object>(m.keySet()) : NONE;
      case "values":
        return a.length == 0 ? new ArrayList<Object>(m.values()) : NONE;
      case "get":
        if (a.length == 1 || a.length == 2) {
          Object v = m.get(a[0]);
          return v != null || m.containsKey(a[0]) ? v : (a.length == 2 ? a[1] : null);
        }
        return NONE;
      default:
        return NONE;
    }
  }

  private static boolean anyMatch(Object prefixes, java.util.function.Predicate<String> test) {
    if (prefixes instanceof Iterable<?> many) {
      for (Object p : many) {
        if (test.test(str(p))) {
          return true;
        }
      }
      return false;
    }
    return test.test(str(prefixes));
  }

  private static String str(Object o) {
    return o == null ? "None" : o.toString();
  }

  private static int toInt(Object o) {
    return o instanceof Number n ? n.intValue() : Integer.parseInt(str(o));
  }

  static List<String> split(String s, Object sep, int maxSplit) {
    List<String> out = new ArrayList<>();
    if (sep == null) {
      int i = 0;
      int n = s.length();
      while (true) {
        while (i < n && isPySpace(s.charAt(i))) {
          i++;
        }
        if (i >= n) {
          return out;
        }
        if (maxSplit >= 0 && out.size() == maxSplit) {
          int end = n;
          while (end > i && isPySpace(s.charAt(end - 1))) {
            end--;
          }
          out.add(s.substring(i, end));
          return out;
        }
        int j = i;
        while (j < n && !isPySpace(s.charAt(j))) {
          j++;
        }
        out.add(s.substring(i, j));
        i = j;
      }
    }
    String d = str(sep);
    if (d.isEmpty()) {
      throw new ChatTemplateException("ValueError: empty separator");
    }
    int from = 0;
    while (maxSplit < 0 || out.size() < maxSplit) {
      int at = s.indexOf(d, from);
      if (at < 0) {
        break;
      }
      out.add(s.substring(from, at));
      from = at + d.length();
    }
    out.add(s.substring(from));
    return out;
  }

  private static List<String> rsplit(String s, String d, int maxSplit) {
    List<String> out = new ArrayList<>();
    int end = s.length();
    while (out.size() < maxSplit) {
      int at = s.lastIndexOf(d, end - d.length());
      if (at < 0) {
        break;
      }
      out.add(0, s.substring(at + d.length(), end));
      end = at;
    }
    out.add(0, s.substring(0, end));
    return out;
  }

  private static String lstrip(String s, Object[] a) {
    int i = 0;
    if (a.length == 0 || a[0] == null) {
      while (i < s.length() && isPySpace(s.charAt(i))) {
        i++;
      }
    } else {
      String chars = str(a[0]);
      while (i < s.length() && chars.indexOf(s.charAt(i)) >= 0) {
        i++;
      }
    }
    return s.substring(i);
  }

  private static String rstrip(String s, Object[] a) {
    int end = s.length();
    if (a.length == 0 || a[0] == null) {
      while (end > 0 && isPySpace(s.charAt(end - 1))) {
        end--;
      }
    } else {
      String chars = str(a[0]);
      while (end > 0 && chars.indexOf(s.charAt(end - 1)) >= 0) {
        end--;
      }
    }
    return s.substring(0, end);
  }

  /** Python's {@code str.isspace} for one character. */
  static boolean isPySpace(char c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0
        || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029
        || c == 0x202f || c == 0x205f || c == 0x3000;
  }

  private static long count(String s, String sub) {
    if (sub.isEmpty()) {
      return s.length() + 1L;
    }
    long n = 0;
    for (int at = s.indexOf(sub); at >= 0; at = s.indexOf(sub, at + sub.length())) {
      n++;
    }
    return n;
  }

  private static String title(String s) {
    StringBuilder out = new StringBuilder(s.length());
    boolean prevCased = false;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      out.append(prevCased ? Character.toLowerCase(c) : Character.toUpperCase(c));
      prevCased = Character.isLetter(c);
    }
    return out.toString();
  }

  @Override
  public Object getValue(ELContext context, Object base, Object property) {
    return null;
  }

  @Override
  public Class<?> getType(ELContext context, Object base, Object property) {
    return null;
  }

  @Override
  public void setValue(ELContext context, Object base, Object property, Object value) {}

  @Override
  public boolean isReadOnly(ELContext context, Object base, Object property) {
    return false;
  }

  @Override
  public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
    return null;
  }

  @Override
  public Class<?> getCommonPropertyType(ELContext context, Object base) {
    return null;
  }
}
