//! Finding QEMU's edu device in sysfs and handing it to user space through
//! `uio_pci_generic`.
//!
//! - bind: `echo "1234 11e8" > /sys/bus/pci/drivers/uio_pci_generic/new_id`
//!   (or `bind` when the id is known already);
//! - BAR0: `mmap` of `/sys/bus/pci/devices/D/resource0`;
//! - interrupts: `read()` of `/dev/uioN` blocks until INTx fired;
//!   `uio_pci_generic` masks INTx in the handler (command register bit 10)
//!   and user space unmasks it through config space;
//! - DMA: bus mastering (command bit 2) set through config space after
//!   `/dev/uioN` is opened (closing it clears bus mastering again).
//!
//! vfio is not an option on Debian's 6.12 kernel: `CONFIG_VFIO_NOIOMMU` is
//! not set and the guest has no IOMMU, so vfio-pci cannot hand the device to
//! user space there.

use crate::EduError;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const VENDOR: u16 = 0x1234;
pub const DEVICE: u16 = 0x11e8;

const PCI_DEVICES: &str = "/sys/bus/pci/devices";
const UIO_DRIVER: &str = "/sys/bus/pci/drivers/uio_pci_generic";
/// PCI command register and its bits.
const PCI_COMMAND: u64 = 0x04;
const CMD_MEMORY: u16 = 1 << 1;
const CMD_MASTER: u16 = 1 << 2;
const CMD_INTX_DISABLE: u16 = 1 << 10;

fn io(path: &Path) -> impl Fn(std::io::Error) -> EduError + '_ {
    move |source| EduError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn read_hex(path: &Path) -> Result<u16, EduError> {
    let s = fs::read_to_string(path).map_err(io(path))?;
    let t = s.trim().trim_start_matches("0x");
    u16::from_str_radix(t, 16).map_err(|_| EduError::Sysfs {
        path: path.to_path_buf(),
        what: format!("not a hex id: {:?}", s.trim()),
    })
}

/// The sysfs directory of the first edu device.
pub fn find() -> Result<PathBuf, EduError> {
    let root = Path::new(PCI_DEVICES);
    let mut found: Vec<PathBuf> = Vec::new();
    for e in fs::read_dir(root).map_err(io(root))? {
        let p = e.map_err(io(root))?.path();
        if read_hex(&p.join("vendor"))? == VENDOR && read_hex(&p.join("device"))? == DEVICE {
            found.push(p);
        }
    }
    found.sort();
    found.into_iter().next().ok_or(EduError::NoDevice)
}

/// Binds `dev` to `uio_pci_generic` (the module must be loaded) and returns
/// its `/dev/uioN`.
pub fn bind_uio(dev: &Path) -> Result<PathBuf, EduError> {
    let bound = fs::read_link(dev.join("driver"))
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
    match bound.as_deref() {
        Some("uio_pci_generic") => {}
        Some(other) => {
            return Err(EduError::Sysfs {
                path: dev.to_path_buf(),
                what: format!("bound to {other}, not uio_pci_generic"),
            })
        }
        None => {
            let drv = Path::new(UIO_DRIVER);
            if !drv.is_dir() {
                return Err(EduError::Sysfs {
                    path: drv.to_path_buf(),
                    what: "missing: load uio_pci_generic first".into(),
                });
            }
            let new_id = drv.join("new_id");
            if fs::write(&new_id, format!("{VENDOR:04x} {DEVICE:04x}")).is_err() {
                // The id is known already: bind this device explicitly.
                let name = dev
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let bind = drv.join("bind");
                fs::write(&bind, name).map_err(io(&bind))?;
            }
        }
    }
    let uio = dev.join("uio");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(mut rd) = fs::read_dir(&uio) {
            if let Some(Ok(e)) = rd.next() {
                let dev_node = Path::new("/dev").join(e.file_name());
                if dev_node.exists() {
                    return Ok(dev_node);
                }
            }
        }
        if Instant::now() > deadline {
            return Err(EduError::Sysfs {
                path: uio,
                what: "no uio device appeared after binding".into(),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The device's PCI config space.
#[derive(Debug)]
pub struct Config {
    file: File,
    path: PathBuf,
}

impl Config {
    pub fn open(dev: &Path) -> Result<Config, EduError> {
        let path = dev.join("config");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(Config { file, path })
    }

    fn command(&self) -> Result<u16, EduError> {
        let mut b = [0u8; 2];
        self.file
            .read_exact_at(&mut b, PCI_COMMAND)
            .map_err(io(&self.path))?;
        Ok(u16::from_le_bytes(b))
    }

    fn set_command(&self, v: u16) -> Result<(), EduError> {
        self.file
            .write_all_at(&v.to_le_bytes(), PCI_COMMAND)
            .map_err(io(&self.path))
    }

    /// Memory decoding and bus mastering on.
    pub fn enable_dma(&self) -> Result<(), EduError> {
        let c = self.command()?;
        self.set_command(c | CMD_MEMORY | CMD_MASTER)
    }

    /// Clears the INTx mask `uio_pci_generic` set in its interrupt handler.
    pub fn unmask_intx(&self) -> Result<(), EduError> {
        let c = self.command()?;
        if c & CMD_INTX_DISABLE != 0 {
            self.set_command(c & !CMD_INTX_DISABLE)?;
        }
        Ok(())
    }
}
