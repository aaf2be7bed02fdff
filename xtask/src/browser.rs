//! The headless browser of the browser tests: Debian's chromium, driven through chromedriver.
//! The tests start both themselves (tests/src/browser.rs); xtask only makes sure they exist and
//! tells the tests where (SVC_CHROMIUM, SVC_CHROMEDRIVER).

use std::env;
use std::path::PathBuf;

use crate::Result;

const INSTALL_HINT: &str = "install Chromium and its WebDriver (Debian: apt-get install chromium chromium-driver)";

/// The two programs the browser tests run.
pub struct Browser {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

impl Browser {
    /// Finds chromium and chromedriver; as root on Debian, installs them when missing.
    pub fn locate() -> Result<Self> {
        if let Some(found) = Self::find()? {
            return Ok(found);
        }
        if !pg_cluster::is_root()? || !pg_cluster::is_debian() {
            return Err(format!(
                "chromium or chromedriver is neither on PATH nor in /usr/bin (nor named by \
                 SVC_CHROMIUM / SVC_CHROMEDRIVER); {INSTALL_HINT}"
            )
            .into());
        }
        println!("xtask: chromium or chromedriver not found; installing Debian's chromium and chromium-driver");
        pg_cluster::apt_install(&["chromium", "chromium-driver"], INSTALL_HINT)?;
        Self::find()?
            .ok_or_else(|| format!("the packages installed no chromium or chromedriver; {INSTALL_HINT}").into())
    }

    fn find() -> Result<Option<Self>> {
        let chromium = find_program("SVC_CHROMIUM", "chromium")?;
        let chromedriver = find_program("SVC_CHROMEDRIVER", "chromedriver")?;
        Ok(chromium.zip(chromedriver).map(|(chromium, chromedriver)| Self { chromium, chromedriver }))
    }
}

/// The program a person named in `variable` (another build), else `name` on PATH, else in
/// /usr/bin (where Debian puts both, even when PATH is trimmed, e.g. under sudo).
fn find_program(variable: &str, name: &str) -> Result<Option<PathBuf>> {
    if let Some(named) = env::var_os(variable).filter(|value| !value.is_empty()) {
        let named = PathBuf::from(named);
        // A wrong path is a mistake to report, not a reason to install Debian's.
        if !named.is_file() {
            return Err(format!("{variable} names {}, which is no file", named.display()).into());
        }
        return Ok(Some(named));
    }
    Ok(env::split_paths(&env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(name))
        .find(|path| path.is_file()))
}
